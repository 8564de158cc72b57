package hnsw

import (
	"math/rand/v2"
	"testing"

	"github.com/engramdb/engram/quant"
)

// BenchmarkScanCodes: the exact scan over the codes of a sparse filter
// (20,000 ids scattered over 400,000 1024-d codes, 400 MB: out of every
// cache, as a session's codes are in a large store), without rescoring.
// Reports ns per code scanned.
//
//	go test ./hnsw -run '^$' -bench ScanCodes
func BenchmarkScanCodes(b *testing.B) {
	const n, dim, allowed = 400_000, 1024, 20_000
	r := rand.New(rand.NewPCG(1, 2))
	g := &graph{dim: dim, metric: quant.Cosine, quant: quant.Quantizer{Dim: dim, Metric: quant.Cosine, Scale: 1.0 / 127}}
	g.codes = make([]int8, n*dim)
	for i := range g.codes {
		g.codes[i] = int8(r.IntN(255) - 127)
	}
	g.flags = make([]uint32, n)
	for i := range g.flags {
		g.flags[i] = flagPresent
	}
	bits := make([]uint64, (n+63)/64)
	for c := 0; c < allowed; {
		id := r.IntN(n)
		if bits[id/64]&(1<<(id%64)) == 0 {
			bits[id/64] |= 1 << (id % 64)
			c++
		}
	}
	q := make([]float32, dim)
	for i := range q {
		q[i] = float32(r.NormFloat64()) / 32
	}
	s := &scratch{}
	a := &accept{bits: bits}
	b.ResetTimer()
	for range b.N {
		if res := g.scan(s, q, 10, n, a, false); len(res) != 10 {
			b.Fatalf("%d results", len(res))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/allowed, "ns/code")
}
