package quant_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/engramdb/engram/bench/dataset"
	"github.com/engramdb/engram/quant"
)

// TestQuantizedRecall ranks the whole base by code distance with the
// default quantizer, as traversal would, and checks recall@10 against the
// exact neighbours, codes alone and after rescoring the top 40 with float
// distances. The thresholds sit a little below the measured values
// (bench/results/quant.md), so a worse quantizer or a broken kernel fails.
func TestQuantizedRecall(t *testing.T) {
	root, err := dataset.FindRoot(".")
	if errors.Is(err, dataset.ErrNoDatasets) {
		t.Skip("shared/datasets not found above the test directory")
	}
	cases := []struct {
		name                string
		minCodes, minRescor float64
	}{
		{"sift10k", 0.97, 0.999},
		{"glove100-10k", 0.96, 0.998},
	}
	for _, c := range cases {
		s, err := dataset.Load(root, c.name)
		if err != nil {
			t.Fatal(err)
		}
		base, queries := s.Base, s.Queries
		if s.Metric == quant.Cosine {
			base, queries = dataset.Normalized(base), dataset.Normalized(queries)
		}
		nq := queries.Len()
		if testing.Short() {
			nq = 100
		}
		// Trained on a 1024-vector sample, like the index does.
		q, err := quant.Train(base.Head(1024).Data, base.Dim, s.Metric, quant.TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dim := base.Dim
		codes := make([]int8, len(base.Data))
		for i := 0; i < base.Len(); i++ {
			q.Encode(codes[i*dim:(i+1)*dim], base.Row(i))
		}
		qc := make([]int8, dim)
		type cand struct {
			id int32
			d  int32
		}
		cands := make([]cand, base.Len())
		var recallCodes, recallRescored float64
		for qi := 0; qi < nq; qi++ {
			q.Encode(qc, queries.Row(qi))
			for i := range cands {
				cands[i] = cand{int32(i), quant.CodeDistance(s.Metric, qc, codes[i*dim:(i+1)*dim])}
			}
			slices.SortFunc(cands, func(a, b cand) int {
				if a.d != b.d {
					return int(a.d - b.d)
				}
				return int(a.id - b.id)
			})
			ids := make([]uint32, 40)
			for i := range ids {
				ids[i] = uint32(cands[i].id)
			}
			recallCodes += dataset.RecallAtK(ids, s.GroundTruth[qi], 10)
			slices.SortFunc(ids, func(a, b uint32) int {
				da := quant.FloatDistance(s.Metric, queries.Row(qi), base.Row(int(a)))
				db := quant.FloatDistance(s.Metric, queries.Row(qi), base.Row(int(b)))
				switch {
				case da < db:
					return -1
				case da > db:
					return 1
				}
				return 0
			})
			recallRescored += dataset.RecallAtK(ids, s.GroundTruth[qi], 10)
		}
		rc, rr := recallCodes/float64(nq), recallRescored/float64(nq)
		t.Logf("%s: recall@10 codes %.4f, rescored %.4f (%d queries)", c.name, rc, rr, nq)
		if rc < c.minCodes || rr < c.minRescor {
			t.Errorf("%s: recall@10 codes %.4f (want >= %.3f), rescored %.4f (want >= %.3f)", c.name, rc, c.minCodes, rr, c.minRescor)
		}
	}
}
