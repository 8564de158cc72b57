package quant

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
)

// Quantizer maps float32 vectors to int8 codes with one global scale:
// code = clamp(round(x/Scale), -127, 127). Scale is set so that the
// ClipQuantile of |x| over the training sample maps to 127; the rare larger
// values saturate. A global symmetric scale keeps int8 dot products
// proportional to float dot products (a·b ≈ Scale² codeA·codeB), so the
// integer kernels serve every metric without per-vector corrections. The
// package documentation gives the measurements behind this choice.
type Quantizer struct {
	Dim    int
	Metric Metric
	Scale  float32
}

// DefaultClipQuantile is TrainOptions.ClipQuantile's default.
const DefaultClipQuantile = 0.9999

// TrainOptions tunes Train. The zero value means the documented defaults.
type TrainOptions struct {
	// ClipQuantile is the quantile of |x| that maps to the largest code.
	// Default 0.9999 (measured best of 0.99..1; see the package doc).
	ClipQuantile float64
}

// Train fits a Quantizer to sample, a flat slice of len(sample)/dim vectors.
// For Cosine the sample must already be L2-normalized.
func Train(sample []float32, dim int, m Metric, opts TrainOptions) (*Quantizer, error) {
	if dim <= 0 {
		return nil, fmt.Errorf("quant: dimension %d must be positive", dim)
	}
	if !m.Valid() {
		return nil, fmt.Errorf("quant: invalid metric %v", m)
	}
	if len(sample) == 0 || len(sample)%dim != 0 {
		return nil, fmt.Errorf("quant: sample length %d is not a positive multiple of dimension %d", len(sample), dim)
	}
	q := opts.ClipQuantile
	if q == 0 {
		q = DefaultClipQuantile
	}
	if !(q > 0 && q <= 1) { // also rejects NaN
		return nil, fmt.Errorf("quant: clip quantile %v outside (0, 1]", q)
	}
	abs := make([]float32, 0, len(sample))
	for _, x := range sample {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, errors.New("quant: sample contains NaN or Inf")
		}
		abs = append(abs, float32(math.Abs(float64(x))))
	}
	sort.Slice(abs, func(i, j int) bool { return abs[i] < abs[j] })
	idx := int(math.Ceil(q*float64(len(abs)))) - 1
	if idx < 0 {
		idx = 0
	}
	clip := abs[idx]
	if clip == 0 {
		clip = abs[len(abs)-1]
	}
	if clip == 0 {
		clip = 1
	}
	return &Quantizer{Dim: dim, Metric: m, Scale: clip / 127}, nil
}

// Encode writes the code of v into dst[:len(v)]; normally both have length
// q.Dim. It panics if dst is shorter than v.
func (q *Quantizer) Encode(dst []int8, v []float32) {
	if len(dst) < len(v) {
		panic("quant: Encode destination shorter than the vector")
	}
	inv := 1 / q.Scale
	dst = dst[:len(v)]
	for i, x := range v {
		r := math.Round(float64(x * inv))
		if r > 127 {
			r = 127
		} else if r < -127 {
			r = -127
		}
		dst[i] = int8(r)
	}
}

// Decode writes the approximate vector of code c into dst[:len(c)]. It
// panics if dst is shorter than c.
func (q *Quantizer) Decode(dst []float32, c []int8) {
	if len(dst) < len(c) {
		panic("quant: Decode destination shorter than the code")
	}
	dst = dst[:len(c)]
	for i, x := range c {
		dst[i] = float32(x) * q.Scale
	}
}

// EncodedSize is the length of MarshalBinary's output.
const EncodedSize = 16

// MarshalBinary encodes the parameters: version u8, metric u8, 2 reserved
// bytes, dim u32, scale f32, reserved u32; all little-endian.
func (q *Quantizer) MarshalBinary() ([]byte, error) {
	b := make([]byte, EncodedSize)
	b[0] = 1
	b[1] = byte(q.Metric)
	binary.LittleEndian.PutUint32(b[4:], uint32(q.Dim))
	binary.LittleEndian.PutUint32(b[8:], math.Float32bits(q.Scale))
	return b, nil
}

// UnmarshalBinary decodes parameters written by MarshalBinary.
func (q *Quantizer) UnmarshalBinary(b []byte) error {
	if len(b) < EncodedSize {
		return fmt.Errorf("quant: parameters need %d bytes, have %d", EncodedSize, len(b))
	}
	if b[0] != 1 {
		return fmt.Errorf("quant: unsupported parameter version %d", b[0])
	}
	m := Metric(b[1])
	if !m.Valid() {
		return fmt.Errorf("quant: invalid metric %d", b[1])
	}
	dim := binary.LittleEndian.Uint32(b[4:])
	scale := math.Float32frombits(binary.LittleEndian.Uint32(b[8:]))
	if dim == 0 || dim > 1<<16 || !(scale > 0) || math.IsInf(float64(scale), 0) {
		return fmt.Errorf("quant: invalid parameters dim=%d scale=%v", dim, scale)
	}
	*q = Quantizer{Dim: int(dim), Metric: m, Scale: scale}
	return nil
}
