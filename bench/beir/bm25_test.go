package beir

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/keyword"
)

// textSet is one BEIR-style set under shared/datasets/text.
type textSet struct{ name, dir, prefix string }

var textSets = []textSet{
	{"scifact", "scifact", ""},
	{"cranfield", "cranfield", ""},
	{"cisi", "cisi", ""},
	{"rgb-zh", "rgb", "zh_"},
	{"rgb-en", "rgb", "en_"},
}

func loadSet(tb testing.TB, s textSet) *Dataset {
	tb.Helper()
	root, ok := FindDatasets()
	if !ok {
		tb.Skip("shared/datasets not found above the working directory; skipping dataset test")
	}
	ds, err := Load(filepath.Join(root, "text", s.dir), s.prefix)
	if err != nil {
		tb.Fatal(err)
	}
	return ds
}

// evalBM25 indexes ds with keyword.Index (one document per record, document
// number = position) and evaluates BM25 top-10 for every judged query.
func evalBM25(tb testing.TB, ds *Dataset, p keyword.BM25) (Metrics, *Run) {
	tb.Helper()
	idx := keyword.NewIndex()
	for i, d := range ds.Docs {
		if err := idx.Add(uint32(i), d.Content()); err != nil {
			tb.Fatal(err)
		}
	}
	parts := []keyword.Part{idx}
	run, err := RunQueries(ds, func(q Query) ([]string, error) {
		hits, err := p.Search(parts, q.Text, 10, nil)
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = ds.Docs[h.Doc].ID
		}
		return ids, err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return Evaluate(run.Ranked, ds.Qrels), run
}

// TestBM25SciFact is the acceptance test: BM25 alone on SciFact reaches the
// BEIR baseline (0.665) within 0.005.
func TestBM25SciFact(t *testing.T) {
	ds := loadSet(t, textSets[0])
	m, _ := evalBM25(t, ds, keyword.BM25{})
	t.Logf("scifact BM25 (k1=%v b=%v): %+v", keyword.DefaultK1, keyword.DefaultB, m)
	if m.Queries != 300 {
		t.Errorf("%d judged queries, want 300", m.Queries)
	}
	if m.NDCG10 < 0.66 {
		t.Fatalf("nDCG@10 = %.4f, want >= 0.66", m.NDCG10)
	}
}

// BenchmarkBM25 reports quality and single-thread query latency per set:
// go test ./bench/beir -run '^$' -bench BM25 -benchtime 1x
func BenchmarkBM25(b *testing.B) {
	for _, s := range textSets {
		b.Run("set="+s.name, func(b *testing.B) {
			ds := loadSet(b, s)
			var m Metrics
			var run *Run
			for b.Loop() {
				m, run = evalBM25(b, ds, keyword.BM25{})
			}
			reportRun(b, m, run)
		})
	}
}

func reportRun(b *testing.B, m Metrics, run *Run) {
	b.ReportMetric(m.NDCG10, "ndcg@10")
	b.ReportMetric(m.Recall5, "recall@5")
	b.ReportMetric(m.Recall10, "recall@10")
	b.ReportMetric(m.MRR10, "mrr@10")
	b.ReportMetric(float64(run.Percentile(50).Microseconds()), "p50_us")
	b.ReportMetric(float64(run.Percentile(99).Microseconds()), "p99_us")
	b.ReportMetric(float64(m.Queries), "queries")
	if len(run.CPU) > 0 {
		b.ReportMetric(float64(run.CPUPercentile(50).Microseconds()), "p50_cpu_us")
		b.ReportMetric(float64(run.CPUPercentile(99).Microseconds()), "p99_cpu_us")
	}
}

// TestBM25Sweep prints nDCG@10 for a grid of (k1, b) on every set; it is a
// measurement, run on demand: go test ./bench/beir -run BM25Sweep -v -sweep
func TestBM25Sweep(t *testing.T) {
	if !*sweep {
		t.Skip("measurement only; pass -sweep")
	}
	for _, s := range textSets {
		ds := loadSet(t, s)
		line := s.name
		for _, p := range []keyword.BM25{{K1: 0.9, B: 0.4}, {K1: 1.2, B: 0.75}, {K1: 1.2, B: 0.5}, {K1: 1.5, B: 0.75}, {K1: 0.9, B: 0.6}} {
			m, _ := evalBM25(t, ds, p)
			line += fmt.Sprintf("  k1=%.1f,b=%.2f: %.4f", p.K1, p.B, m.NDCG10)
		}
		t.Log(line)
	}
}
