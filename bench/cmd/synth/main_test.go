package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/bench/dataset"
	"github.com/engramdb/engram/quant"
)

func TestWritesReadableSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := run([]string{"-n", "300", "-dim", "16", "-queries", "7", "-k", "5", "-out", dir}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v, %v", st.Mode(), err)
	}
	s, err := dataset.LoadFiles("synth", filepath.Join(dir, "base.fvecs"), filepath.Join(dir, "query.fvecs"),
		filepath.Join(dir, "groundtruth.ivecs"), quant.Cosine)
	if err != nil {
		t.Fatal(err)
	}
	if s.Base.Len() != 300 || s.Base.Dim != 16 || s.Queries.Len() != 7 || len(s.GroundTruth[0]) != 5 {
		t.Fatalf("shape: %d x %d, %d queries, gt %d", s.Base.Len(), s.Base.Dim, s.Queries.Len(), len(s.GroundTruth[0]))
	}
	want, _ := dataset.Synthetic(dataset.SyntheticConfig{N: 300, Dim: 16, Queries: 7, K: 5})
	for i, x := range want.Base.Data {
		if s.Base.Data[i] != x {
			t.Fatal("files differ from the generator's output")
		}
	}
	for _, args := range [][]string{{"-n", "10"}, {"-n", "0", "-out", dir}, {"-dim", "-1", "-out", dir}} {
		if err := run(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
