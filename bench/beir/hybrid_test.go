package beir

import (
	"context"
	"testing"

	"github.com/engramdb/engram/keyword"
	"github.com/engramdb/engram/memory/lexical"
)

// rrf fuses ranked lists by reciprocal rank fusion, score Σ 1/(k + rank),
// ties by first appearance: the reference the memory layer's hybrid recall
// can be compared with.
func rrf(k int, lists ...[]int) []int {
	score := map[int]float64{}
	var order []int
	for _, l := range lists {
		for r, d := range l {
			if _, ok := score[d]; !ok {
				order = append(order, d)
			}
			score[d] += 1 / float64(k+r+1)
		}
	}
	// Stable insertion sort: the lists are short (2 x 100).
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && score[order[j]] > score[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	return order
}

func TestRRF(t *testing.T) {
	// d1: 1/61 + 1/62; d2: 1/62 + 1/61; d3: 1/63; tie d1/d2 by first appearance.
	got := rrf(60, []int{1, 2, 3}, []int{2, 1})
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("rrf = %v", got)
	}
}

// BenchmarkHybridRRF reports BM25 + lexical-embedder fusion (RRF, k=60, top
// 100 of each), both exact: go test ./bench/beir -run '^$' -bench HybridRRF -benchtime 1x
func BenchmarkHybridRRF(b *testing.B) {
	ctx := context.Background()
	for _, s := range textSets {
		b.Run("set="+s.name, func(b *testing.B) {
			ds := loadSet(b, s)
			e, err := lexical.New(lexical.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var m Metrics
			var run *Run
			for b.Loop() {
				vecs, err := EmbedCorpus(ctx, e, ds.Docs, 256)
				if err != nil {
					b.Fatal(err)
				}
				idx := keyword.NewIndex()
				for i, d := range ds.Docs {
					if err := idx.Add(uint32(i), d.Content()); err != nil {
						b.Fatal(err)
					}
				}
				run, err = RunQueries(ds, func(q Query) ([]string, error) {
					hits, err := idx.Search(q.Text, 100, nil)
					if err != nil {
						return nil, err
					}
					lex := make([]int, len(hits))
					for i, h := range hits {
						lex[i] = int(h.Doc)
					}
					v, err := e.Embed(ctx, []string{q.Text})
					if err != nil {
						return nil, err
					}
					fused := rrf(60, lex, TopKDot(vecs, v[0], 100))
					ids := make([]string, 0, 10)
					for _, d := range fused[:min(10, len(fused))] {
						ids = append(ids, ds.Docs[d].ID)
					}
					return ids, nil
				})
				if err != nil {
					b.Fatal(err)
				}
				m = Evaluate(run.Ranked, ds.Qrels)
			}
			reportRun(b, m, run)
		})
	}
}
