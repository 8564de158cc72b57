package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/engramdb/engram/quant"
)

// SyntheticConfig describes a clustered synthetic set. The zero value of a
// field means its documented default.
type SyntheticConfig struct {
	N        int     // base vectors (required)
	Queries  int     // default 1000
	Dim      int     // default 1024
	Latent   int     // intrinsic dimension, default 32
	Clusters int     // mixture components, default 64
	Spread   float64 // within-cluster std relative to the centres', default 0.35
	Noise    float64 // isotropic ambient noise std per coordinate, default 0.02
	Seed     uint64  // default 1
	K        int     // ground-truth depth, default 100
}

func (c *SyntheticConfig) defaults() error {
	if c.N <= 0 {
		return fmt.Errorf("dataset: synthetic N=%d must be positive", c.N)
	}
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Queries, 1000)
	def(&c.Dim, 1024)
	def(&c.Latent, 32)
	def(&c.Clusters, 64)
	def(&c.K, 100)
	if c.Spread == 0 {
		c.Spread = 0.35
	}
	if c.Noise == 0 {
		c.Noise = 0.02
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Queries < 0 || c.Dim <= 0 || c.Dim > MaxDim || c.Latent <= 0 || c.Clusters <= 0 || c.K <= 0 || c.Spread < 0 || c.Noise < 0 {
		return fmt.Errorf("dataset: invalid synthetic config %+v", *c)
	}
	return nil
}

// Synthetic generates an embedding-like set, deterministic for a config:
// a Gaussian mixture in a Latent-dimensional space (Clusters centres with
// unit-variance coordinates, points at Spread around their centre), mapped
// into Dim dimensions by a fixed random linear map, plus small isotropic
// noise, then L2-normalized. Queries come from the same distribution (a
// separate random stream, so never copies of base points). The metric is
// Cosine and the ground truth is exact (GroundTruth with K neighbours).
func Synthetic(cfg SyntheticConfig) (*Set, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	// proj is Dim rows of Latent: coordinate j of a point is proj_j · z.
	proj := gaussians(r, cfg.Dim*cfg.Latent, 1/math.Sqrt(float64(cfg.Latent)))
	centres := gaussians(r, cfg.Clusters*cfg.Latent, 1)
	gen := func(n int, stream uint64) *Vectors {
		v := &Vectors{Dim: cfg.Dim, Data: make([]float32, n*cfg.Dim)}
		parallel(n, func(lo, hi int) {
			// One random stream per point keeps the output independent
			// of the number of goroutines.
			z := make([]float32, cfg.Latent)
			for i := lo; i < hi; i++ {
				pr := rand.New(rand.NewPCG(cfg.Seed^stream, uint64(i)))
				c := centres[pr.IntN(cfg.Clusters)*cfg.Latent:][:cfg.Latent]
				for k := range z {
					z[k] = c[k] + float32(pr.NormFloat64()*cfg.Spread)
				}
				row := v.Row(i)
				for j := range row {
					row[j] = quant.DotFloat32(proj[j*cfg.Latent:(j+1)*cfg.Latent], z) + float32(pr.NormFloat64()*cfg.Noise)
				}
				Normalize(row)
			}
		})
		return v
	}
	s := &Set{
		Name:    fmt.Sprintf("synthetic-%dd-%d", cfg.Dim, cfg.N),
		Metric:  quant.Cosine,
		Base:    gen(cfg.N, 0xba5e),
		Queries: gen(cfg.Queries, 0x9e7),
	}
	s.GroundTruth = GroundTruth(s.Base, s.Queries, s.Metric, min(cfg.K, cfg.N), 0)
	return s, nil
}

func gaussians(r *rand.Rand, n int, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * std)
	}
	return v
}

// parallel runs f over [0, n) split across GOMAXPROCS goroutines.
func parallel(n int, f func(lo, hi int)) {
	p := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for t := 0; t < p; t++ {
		lo, hi := t*n/p, (t+1)*n/p
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}
