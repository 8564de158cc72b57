package keyword

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/bench/beir"
)

var sweep = flag.Bool("sweep", false, "run the analyzer measurement over the BEIR-style sets (slow)")

// TestAnalyzerSweep measures what stemming and stopword removal do to BM25
// nDCG@10 (the evidence for defaultAnalyzer): go test ./keyword -run
// AnalyzerSweep -v -sweep. It swaps the package's analyzer, so it must not
// run in parallel with other tests.
func TestAnalyzerSweep(t *testing.T) {
	if !*sweep {
		t.Skip("measurement only; pass -sweep")
	}
	root, ok := beir.FindDatasets()
	if !ok {
		t.Skip("shared/datasets not found")
	}
	saved := defaultAnalyzer
	defer func() { defaultAnalyzer = saved }()
	sets := []struct{ dir, prefix string }{{"scifact", ""}, {"cranfield", ""}, {"cisi", ""}, {"rgb", "zh_"}, {"rgb", "en_"}}
	for _, s := range sets {
		ds, err := beir.Load(filepath.Join(root, "text", s.dir), s.prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []analyzer{{}, {stopword: true}, {stem: true}, {stem: true, stopword: true}} {
			defaultAnalyzer = a
			idx := NewIndex()
			for i, d := range ds.Docs {
				_ = idx.Add(uint32(i), d.Content())
			}
			run, err := beir.RunQueries(ds, func(q beir.Query) ([]string, error) {
				hits, err := idx.Search(q.Text, 10, nil)
				ids := make([]string, len(hits))
				for i, h := range hits {
					ids[i] = ds.Docs[h.Doc].ID
				}
				return ids, err
			})
			if err != nil {
				t.Fatal(err)
			}
			m := beir.Evaluate(run.Ranked, ds.Qrels)
			t.Logf("%s%s stem=%v stop=%v ndcg@10=%.4f recall@10=%.4f", s.prefix, s.dir, a.stem, a.stopword, m.NDCG10, m.Recall10)
		}
	}
}
