package hnsw

import (
	"testing"
)

// The ef at which the recall tests must reach 0.95 recall@10.
const recallEf = 100

func TestRecallDatasets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 10k-vector indexes; skipped in -short")
	}
	for _, name := range []string{"sift10k", "glove10k"} {
		t.Run(name, func(t *testing.T) {
			ds := loadDataset(t, name)
			ix := build(t, Config{Dim: len(ds.base[0]), Metric: ds.metric, Seed: 1}, ds.base)
			var sum float64
			for i, q := range ds.queries {
				res, err := ix.Search(q, 10, SearchOptions{Ef: recallEf})
				if err != nil {
					t.Fatal(err)
				}
				sum += recallAt(res, ds.gt[i])
			}
			r := sum / float64(len(ds.queries))
			t.Logf("%s recall@10 = %.4f at ef=%d", name, r, recallEf)
			if r < 0.95 {
				t.Fatalf("recall@10 %.4f < 0.95", r)
			}
		})
	}
}
