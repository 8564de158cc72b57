package hnsw

import (
	"errors"
	"fmt"
	"math"

	"github.com/engramdb/engram/quant"
)

// Config describes an index. The zero value of each optional field means
// the documented default.
type Config struct {
	// Dim is the vector dimension (required, 1..65536).
	Dim int
	// Metric is the distance (required).
	Metric quant.Metric
	// M is the number of links a node gets per level (2M on level 0).
	// Default 16; 2..128.
	M int
	// EfConstruction is the beam width used while inserting. Default 200.
	EfConstruction int
	// Seed seeds the level generator; the same seed and insert order
	// (from one goroutine) build the same graph.
	Seed int64
	// Quantizer encodes vectors to codes. Nil: trained by the index from
	// the first TrainSize vectors (see the package doc).
	Quantizer *quant.Quantizer
	// TrainSize is how many vectors the self-trained quantizer is fitted
	// on. Default 1024. Ignored when Quantizer is set.
	TrainSize int
	// Capacity pre-sizes the arrays for this many vectors. It is a hint:
	// the index grows past it, and values above 1<<22 are treated as 1<<22
	// so a typo cannot allocate the machine's memory up front.
	Capacity int
}

// Defaults.
const (
	DefaultM              = 16
	DefaultEfConstruction = 200
	DefaultTrainSize      = 1024
	// DefaultEf is the search beam width when SearchOptions.Ef is zero
	// (raised to k when k is larger).
	DefaultEf = 64
	// DefaultWidth is how many of its best unexpanded nodes a query's
	// walk expands together when SearchOptions.Width is zero, and the
	// most it may ask for.
	DefaultWidth = walkWidth
	maxDim       = 1 << 16
	maxM         = 128
	maxLevel     = 16
)

// Errors. They are wrapped with details; test with errors.Is.
var (
	ErrDimension   = errors.New("hnsw: dimension mismatch")
	ErrInvalid     = errors.New("hnsw: invalid vector")
	ErrBadArgument = errors.New("hnsw: invalid argument")
	ErrNotFound    = errors.New("hnsw: no such id")
	ErrDeleted     = errors.New("hnsw: id already deleted")
	ErrCorrupt     = errors.New("hnsw: corrupt index data")
)

func (c Config) withDefaults() (Config, error) {
	if c.Dim <= 0 || c.Dim > maxDim {
		return c, fmt.Errorf("%w: dimension %d outside 1..%d", ErrBadArgument, c.Dim, maxDim)
	}
	if !c.Metric.Valid() {
		return c, fmt.Errorf("%w: metric %v", ErrBadArgument, c.Metric)
	}
	if c.M == 0 {
		c.M = DefaultM
	}
	if c.M < 2 || c.M > maxM {
		return c, fmt.Errorf("%w: M %d outside 2..%d", ErrBadArgument, c.M, maxM)
	}
	if c.EfConstruction == 0 {
		c.EfConstruction = DefaultEfConstruction
	}
	if c.EfConstruction < 1 || c.EfConstruction > 1<<16 {
		return c, fmt.Errorf("%w: EfConstruction %d outside 1..65536", ErrBadArgument, c.EfConstruction)
	}
	if c.TrainSize == 0 {
		c.TrainSize = DefaultTrainSize
	}
	if c.TrainSize < 1 {
		return c, fmt.Errorf("%w: TrainSize %d", ErrBadArgument, c.TrainSize)
	}
	if c.Capacity < 0 {
		return c, fmt.Errorf("%w: Capacity %d", ErrBadArgument, c.Capacity)
	}
	c.Capacity = min(c.Capacity, 1<<22)
	if q := c.Quantizer; q != nil {
		if q.Dim != c.Dim || q.Metric != c.Metric || !(q.Scale > 0) || math.IsInf(float64(q.Scale), 0) {
			return c, fmt.Errorf("%w: quantizer (dim %d, %v, scale %v) does not fit dim %d, %v",
				ErrBadArgument, q.Dim, q.Metric, q.Scale, c.Dim, c.Metric)
		}
		cp := *q
		c.Quantizer = &cp
	}
	return c, nil
}

// prepare validates v and returns the form that is stored: a copy,
// L2-normalized under Cosine.
func prepare(v []float32, dim int, m quant.Metric) ([]float32, error) {
	if len(v) != dim {
		return nil, fmt.Errorf("%w: vector has %d components, index has %d", ErrDimension, len(v), dim)
	}
	var norm float64
	for i, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: component %d is %v", ErrInvalid, i, x)
		}
		norm += f * f
	}
	out := make([]float32, dim)
	copy(out, v)
	if m == quant.Cosine {
		if norm == 0 || math.IsInf(norm, 0) {
			return nil, fmt.Errorf("%w: zero or unnormalizable vector under cosine", ErrInvalid)
		}
		inv := 1 / math.Sqrt(norm)
		for i := range out {
			out[i] = float32(float64(out[i]) * inv)
		}
	}
	return out, nil
}
