// Command quantstudy measures how int8 quantization choices affect
// brute-force recall@10: for every query the whole base is ranked by code
// distance (query encoded the same way, as graph traversal does), and the
// top 10 are compared with the exact neighbours; "rescored" takes the top
// -rescore by code distance and reorders them with float32 distances, as
// hnsw's final step does.
//
//	go run ./bench/cmd/quantstudy [-synthetic 20000] [-rescore 40]
//
// Variants:
//   - global q=Q: quant.Train's symmetric global scale with clip quantile Q
//     (the integer kernels apply directly, code dot ∝ float dot).
//   - global+offset: per-dimension mean subtracted first, then the global
//     scale (L2 only: the offset cancels in a-b, so L2SqInt8 still applies).
//   - per-dim: a separate scale and offset per dimension from its 0.1/99.9%
//     quantiles, using all 256 levels; distances computed on the decoded
//     vectors, since per-dimension scales break the plain integer kernels.
//     It is the upper bound of what a per-dimension scheme could give.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/engramdb/engram/bench/dataset"
	"github.com/engramdb/engram/quant"
)

func main() {
	synth := flag.Int("synthetic", 20000, "size of the synthetic 1024-d set (0 to skip)")
	rescore := flag.Int("rescore", 40, "candidates rescored with float distances")
	flag.Parse()
	root, err := dataset.FindRoot(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "quantstudy:", err)
		os.Exit(1)
	}
	var sets []*dataset.Set
	for _, name := range []string{"sift10k", "glove100-10k"} {
		s, err := dataset.Load(root, name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "quantstudy:", err)
			os.Exit(1)
		}
		sets = append(sets, s)
	}
	if *synth > 0 {
		s, err := dataset.Synthetic(dataset.SyntheticConfig{N: *synth, Queries: 200, K: 10})
		if err != nil {
			fmt.Fprintln(os.Stderr, "quantstudy:", err)
			os.Exit(1)
		}
		sets = append(sets, s)
	}
	fmt.Printf("| set | variant | recall@10 codes only | recall@10 rescored top %d |\n|---|---|---|---|\n", *rescore)
	for _, s := range sets {
		for _, r := range Study(s, *rescore) {
			fmt.Printf("| %s | %s | %.4f | %.4f |\n", s.Name, r.Variant, r.Codes, r.Rescored)
		}
	}
}

// Row is one line of the study.
type Row struct {
	Variant         string
	Codes, Rescored float64
}

// Study runs every variant on s (Cosine sets are normalized first).
func Study(s *dataset.Set, rescore int) []Row {
	base, queries := s.Base, s.Queries
	if s.Metric == quant.Cosine {
		base, queries = dataset.Normalized(base), dataset.Normalized(queries)
	}
	var rows []Row
	for _, q := range []float64{0.99, 0.999, 0.9999, 1} {
		qz, err := quant.Train(base.Data, base.Dim, s.Metric, quant.TrainOptions{ClipQuantile: q})
		if err != nil {
			panic(err)
		}
		codes := encodeAll(qz, base)
		qcodes := encodeAll(qz, queries)
		dist := func(qi, i int) float64 {
			return float64(quant.CodeDistance(s.Metric, qcodes[qi*base.Dim:][:base.Dim], codes[i*base.Dim:][:base.Dim]))
		}
		c, r := evaluate(s, base, queries, rescore, dist)
		rows = append(rows, Row{fmt.Sprintf("global q=%g", q), c, r})
	}
	if s.Metric == quant.L2 {
		mean := make([]float32, base.Dim)
		for i := 0; i < base.Len(); i++ {
			for j, x := range base.Row(i) {
				mean[j] += x / float32(base.Len())
			}
		}
		shifted := shift(base, mean)
		qz, _ := quant.Train(shifted.Data, base.Dim, s.Metric, quant.TrainOptions{})
		codes := encodeAll(qz, shifted)
		qcodes := encodeAll(qz, shift(queries, mean))
		dist := func(qi, i int) float64 {
			return float64(quant.L2SqInt8(qcodes[qi*base.Dim:][:base.Dim], codes[i*base.Dim:][:base.Dim]))
		}
		c, r := evaluate(s, base, queries, rescore, dist)
		rows = append(rows, Row{"global q=0.999 + per-dim offset", c, r})
	}
	dec, qdec := perDim(base, queries)
	dist := func(qi, i int) float64 {
		return float64(quant.FloatDistance(s.Metric, qdec.Row(qi), dec.Row(i)))
	}
	c, r := evaluate(s, base, queries, rescore, dist)
	rows = append(rows, Row{"per-dim scale+offset (decoded floats)", c, r})
	return rows
}

func encodeAll(q *quant.Quantizer, v *dataset.Vectors) []int8 {
	dst := make([]int8, len(v.Data))
	for i := 0; i < v.Len(); i++ {
		q.Encode(dst[i*v.Dim:(i+1)*v.Dim], v.Row(i))
	}
	return dst
}

func shift(v *dataset.Vectors, by []float32) *dataset.Vectors {
	out := &dataset.Vectors{Dim: v.Dim, Data: slices.Clone(v.Data)}
	for i := range out.Data {
		out.Data[i] -= by[i%v.Dim]
	}
	return out
}

// perDim quantizes every dimension to 256 levels between its 0.1% and
// 99.9% quantiles over the base and returns the decoded base and queries.
func perDim(base, queries *dataset.Vectors) (*dataset.Vectors, *dataset.Vectors) {
	lo, hi := make([]float32, base.Dim), make([]float32, base.Dim)
	col := make([]float32, base.Len())
	for j := 0; j < base.Dim; j++ {
		for i := range col {
			col[i] = base.Data[i*base.Dim+j]
		}
		slices.Sort(col)
		lo[j] = col[int(0.001*float64(len(col)-1))]
		hi[j] = col[int(0.999*float64(len(col)-1))]
		if hi[j] == lo[j] {
			hi[j] = lo[j] + 1
		}
	}
	dec := func(v *dataset.Vectors) *dataset.Vectors {
		out := &dataset.Vectors{Dim: v.Dim, Data: make([]float32, len(v.Data))}
		for i, x := range v.Data {
			j := i % v.Dim
			step := (hi[j] - lo[j]) / 255
			c := math.Round(float64((x - lo[j]) / step))
			c = math.Max(0, math.Min(255, c))
			out.Data[i] = lo[j] + float32(c)*step
		}
		return out
	}
	return dec(base), dec(queries)
}

// evaluate returns mean recall@10 of ranking by dist, and of reranking its
// top rescore candidates by the exact float distance.
func evaluate(s *dataset.Set, base, queries *dataset.Vectors, rescore int, dist func(q, i int) float64) (codes, rescored float64) {
	const k = 10
	type cand struct {
		id int
		d  float64
	}
	cands := make([]cand, base.Len())
	ids := make([]uint32, k)
	for q := 0; q < queries.Len(); q++ {
		for i := range cands {
			cands[i] = cand{i, dist(q, i)}
		}
		sort.Slice(cands, func(a, b int) bool {
			if cands[a].d != cands[b].d {
				return cands[a].d < cands[b].d
			}
			return cands[a].id < cands[b].id
		})
		for i := range ids {
			ids[i] = uint32(cands[i].id)
		}
		codes += dataset.RecallAtK(ids, s.GroundTruth[q], k)
		top := slices.Clone(cands[:rescore])
		for i := range top {
			top[i].d = float64(quant.FloatDistance(s.Metric, queries.Row(q), base.Row(top[i].id)))
		}
		sort.Slice(top, func(a, b int) bool { return top[a].d < top[b].d })
		for i := range ids {
			ids[i] = uint32(top[i].id)
		}
		rescored += dataset.RecallAtK(ids, s.GroundTruth[q], k)
	}
	n := float64(queries.Len())
	return codes / n, rescored / n
}
