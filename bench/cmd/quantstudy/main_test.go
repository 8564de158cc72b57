package main

import (
	"testing"

	"github.com/engramdb/engram/bench/dataset"
	"github.com/engramdb/engram/quant"
)

func TestStudy(t *testing.T) {
	s, err := dataset.Synthetic(dataset.SyntheticConfig{N: 1000, Queries: 20, Dim: 64, K: 10})
	if err != nil {
		t.Fatal(err)
	}
	rows := Study(s, 40)
	if len(rows) != 5 { // four clip quantiles and per-dim (no offset row under Cosine)
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	for _, r := range rows {
		if r.Codes < 0.5 || r.Codes > 1 || r.Rescored < r.Codes-0.05 || r.Rescored > 1 {
			t.Errorf("implausible %+v", r)
		}
	}
	s.Metric = quant.L2
	if rows := Study(s, 40); len(rows) != 6 {
		t.Fatalf("L2: %d rows", len(rows))
	}
}
