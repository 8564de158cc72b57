package lexical

import (
	"context"
	"flag"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/bench/beir"
)

var sweep = flag.Bool("sweep", false, "run the feature measurement over the BEIR-style sets (slow)")

// TestFeatureSweep measures nDCG@10 (exact cosine) for feature variants, the
// evidence for defaultFeatures: go test ./memory/lexical -run FeatureSweep -v -sweep
func TestFeatureSweep(t *testing.T) {
	if !*sweep {
		t.Skip("measurement only; pass -sweep")
	}
	root, ok := beir.FindDatasets()
	if !ok {
		t.Skip("shared/datasets not found")
	}
	sets := []struct{ dir, prefix string }{{"scifact", ""}, {"cranfield", ""}, {"cisi", ""}, {"rgb", "zh_"}, {"rgb", "en_"}}
	variants := []features{
		{minN: 3, maxN: 5, ngramWeight: 0},
		{minN: 3, maxN: 5, ngramWeight: 0.5},
		{minN: 3, maxN: 5, ngramWeight: 1},
		{minN: 3, maxN: 5, ngramWeight: 2},
		{minN: 3, maxN: 4, ngramWeight: 1},
	}
	ctx := context.Background()
	for _, s := range sets {
		ds, err := beir.Load(filepath.Join(root, "text", s.dir), s.prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range variants {
			e := &Embedder{dim: DefaultDim, cfg: f}
			docs, err := beir.EmbedCorpus(ctx, e, ds.Docs, 256)
			if err != nil {
				t.Fatal(err)
			}
			run, err := beir.RunQueries(ds, func(q beir.Query) ([]string, error) {
				v, err := e.Embed(ctx, []string{q.Text})
				if err != nil {
					return nil, err
				}
				var ids []string
				for _, d := range beir.TopKDot(docs, v[0], 10) {
					ids = append(ids, ds.Docs[d].ID)
				}
				return ids, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			m := beir.Evaluate(run.Ranked, ds.Qrels)
			t.Logf("%s%s n=%d-%d w=%.1f ndcg@10=%.4f recall@10=%.4f", s.prefix, s.dir, f.minN, f.maxN, f.ngramWeight, m.NDCG10, m.Recall10)
		}
	}
}
