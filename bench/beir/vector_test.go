package beir

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/engramdb/engram/memory/lexical"
)

func TestTopKDot(t *testing.T) {
	docs := [][]float32{{1, 0}, {0, 1}, {0.6, 0.8}, {1, 0}, {-1, 0}}
	cases := []struct {
		q    []float32
		k    int
		want []int
	}{
		{[]float32{1, 0}, 3, []int{0, 3, 2}}, // tie 0/3 by index
		{[]float32{0, 1}, 2, []int{1, 2}},
		{[]float32{0, 1}, 10, []int{1, 2, 0, 3, 4}},
	}
	for _, c := range cases {
		if got := TopKDot(docs, c.q, c.k); !slices.Equal(got, c.want) {
			t.Errorf("TopKDot(%v, %d) = %v, want %v", c.q, c.k, got, c.want)
		}
	}
}

// evalVectors embeds ds with e and ranks by exact cosine.
func evalVectors(tb testing.TB, ds *Dataset, e Embedder) (Metrics, *Run) {
	tb.Helper()
	ctx := context.Background()
	docs, err := EmbedCorpus(ctx, e, ds.Docs, 256)
	if err != nil {
		tb.Fatal(err)
	}
	run, err := RunQueries(ds, func(q Query) ([]string, error) {
		v, err := e.Embed(ctx, []string{q.Text})
		if err != nil {
			return nil, err
		}
		idx := TopKDot(docs, v[0], 10)
		ids := make([]string, len(idx))
		for i, d := range idx {
			ids[i] = ds.Docs[d].ID
		}
		return ids, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return Evaluate(run.Ranked, ds.Qrels), run
}

// BenchmarkLexical reports the lexical embedder's retrieval quality with
// exact cosine search (latency includes the query embedding and a
// brute-force scan): go test ./bench/beir -run '^$' -bench Lexical -benchtime 1x
func BenchmarkLexical(b *testing.B) {
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
				m, run = evalVectors(b, ds, e)
			}
			reportRun(b, m, run)
		})
	}
}

// TestLexicalDimSweep measures quality against dimension:
// go test ./bench/beir -run LexicalDimSweep -v -sweep
func TestLexicalDimSweep(t *testing.T) {
	if !*sweep {
		t.Skip("measurement only; pass -sweep")
	}
	for _, s := range textSets {
		ds := loadSet(t, s)
		line := s.name
		for _, dim := range []int{256, 512, 1024, 2048, 4096} {
			e, err := lexical.New(lexical.Options{Dim: dim})
			if err != nil {
				t.Fatal(err)
			}
			m, _ := evalVectors(t, ds, e)
			line += fmt.Sprintf("  d=%d: %.4f", dim, m.NDCG10)
		}
		t.Log(line)
	}
}
