package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/engramdb/engram/bench/dataset"
	"github.com/engramdb/engram/hnsw"
)

func TestRunPrintsOneLinePerEf(t *testing.T) {
	args := writeSet(t, t.TempDir(), 2000, 32)
	rs := runLines(t, append(args, "-ef", "10,100", "-threads", "2"))
	if len(rs) != 2 || rs[0].Ef != 10 || rs[1].Ef != 100 {
		t.Fatalf("results %+v", rs)
	}
	// Recall is computed through the id->row map, so a broken map under
	// concurrent build would show as low recall.
	if rs[1].Recall10 < 0.9 || rs[1].Recall10 < rs[0].Recall10 {
		t.Errorf("recall at ef=10 %v, ef=100 %v", rs[0].Recall10, rs[1].Recall10)
	}
	if rs[0].QPS <= 0 || rs[0].P99us < rs[0].P50us || rs[0].BytesPerVector <= 32 || rs[0].N != 2000 {
		t.Errorf("implausible figures %+v", rs[0])
	}
}

// TestWidths checks -width: each ef is searched at every width in turn,
// and every width finds the neighbours.
func TestWidths(t *testing.T) {
	args := writeSet(t, t.TempDir(), 1500, 24)
	rs := runLines(t, append(args, "-ef", "20,80", "-width", "1,3"))
	if len(rs) != 4 {
		t.Fatalf("%d lines, want 4: %+v", len(rs), rs)
	}
	for i, want := range []struct{ ef, width int }{{20, 1}, {20, 3}, {80, 1}, {80, 3}} {
		if rs[i].Ef != want.ef || rs[i].Width != want.width {
			t.Errorf("line %d: ef %d width %d, want %d, %d", i, rs[i].Ef, rs[i].Width, want.ef, want.width)
		}
		if rs[i].Ef == 80 && rs[i].Recall10 < 0.9 {
			t.Errorf("ef 80 width %d: recall %v", rs[i].Width, rs[i].Recall10)
		}
	}
	if err := run(append(args, "-width", "4"), io.Discard); err == nil {
		t.Error("a width past hnsw.DefaultWidth was accepted")
	}
}

// TestGraphFile checks -graph: the first run builds and saves the index,
// the second searches the saved one and finds the same recall; a file of
// another data set is refused.
func TestGraphFile(t *testing.T) {
	dir := t.TempDir()
	args := writeSet(t, dir, 1500, 24)
	graph := filepath.Join(dir, "g.hnsw")
	first := runLines(t, append(args, "-graph", graph, "-ef", "20,80", "-threads", "2"))
	second := runLines(t, append(args, "-graph", graph, "-ef", "20,80"))
	for i := range first {
		if first[i].Recall10 != second[i].Recall10 {
			t.Errorf("ef %d: recall %v built, %v loaded", first[i].Ef, first[i].Recall10, second[i].Recall10)
		}
	}
	if first[0].BuildS <= 0 || second[0].BuildS != 0 {
		t.Errorf("build seconds %v built, %v loaded", first[0].BuildS, second[0].BuildS)
	}
	other := writeSet(t, t.TempDir(), 1000, 24)
	if err := run(append(other, "-graph", graph), io.Discard); err == nil {
		t.Error("a graph of another data set was searched")
	}
}

// writeSet writes a synthetic set of n vectors in dir and returns the
// flags naming it.
func writeSet(t *testing.T, dir string, n, dim int) []string {
	t.Helper()
	s, err := dataset.Synthetic(dataset.SyntheticConfig{N: n, Queries: 50, Dim: dim, Latent: 8, Clusters: 8, K: 10})
	if err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func(io.Writer) error{
		"b.fvecs":  func(w io.Writer) error { return dataset.WriteFvecs(w, s.Base) },
		"q.fvecs":  func(w io.Writer) error { return dataset.WriteFvecs(w, s.Queries) },
		"gt.ivecs": func(w io.Writer) error { return dataset.WriteIvecs(w, s.GroundTruth) },
	} {
		if err := dataset.WriteFile(filepath.Join(dir, name), write); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"-base", filepath.Join(dir, "b.fvecs"), "-query", filepath.Join(dir, "q.fvecs"),
		"-gt", filepath.Join(dir, "gt.ivecs"), "-metric", "cosine", "-m", "8", "-efc", "64"}
}

func runLines(t *testing.T, args []string) []Result {
	t.Helper()
	var out bytes.Buffer
	if err := run(args, &out); err != nil {
		t.Fatal(err)
	}
	var rs []Result
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-dataset", "nope"},
		{"-base", "x", "-query", "y", "-gt", "z"},
		{"-dataset", "sift10k", "-ef", "10,x"},
		{"-dataset", "sift10k", "-m", "1"},
		{"-dataset", "sift10k", "-metric", "hamming"},
	} {
		if err := run(args, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// BenchmarkANN builds an index per shared set once (M=16, efC=200) and
// searches its queries one at a time, reporting recall@10 and latency
// percentiles next to the time per query:
//
//	go test -run XXX -bench ANN -benchtime 2000x ./bench/cmd/ann
func BenchmarkANN(b *testing.B) {
	root, err := dataset.FindRoot(".")
	if err != nil {
		b.Skip("shared/datasets not found above the test directory")
	}
	for _, name := range []string{"sift10k", "glove100-10k"} {
		set, err := dataset.Load(root, name)
		if err != nil {
			b.Fatal(err)
		}
		var bt *built
		for _, ef := range []int{20, 40, 80, 160} {
			b.Run(fmt.Sprintf("set=%s/ef=%d", name, ef), func(b *testing.B) {
				if bt == nil {
					if bt, err = build(set, config{m: 16, efc: 200, threads: runtime.GOMAXPROCS(0)}); err != nil {
						b.Fatal(err)
					}
				}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				opts := hnsw.SearchOptions{Ef: ef}
				sw, err := bt.search(set, 10, opts) // quality, and warm-up
				if err != nil {
					b.Fatal(err)
				}
				q := 0
				for b.Loop() {
					if _, err := bt.ix.Search(set.Queries.Row(q), 10, opts); err != nil {
						b.Fatal(err)
					}
					if q++; q == set.Queries.Len() {
						q = 0
					}
				}
				b.ReportMetric(sw.recall, "recall@10")
				b.ReportMetric(pct(sw.cpuLat, 50), "p50-cpu-us")
				b.ReportMetric(pct(sw.cpuLat, 99), "p99-cpu-us")
				b.ReportMetric(float64(len(sw.lat))/sw.cpu.Seconds(), "cpu-qps")
				b.ReportMetric(bt.resident, "resident-B/vec")
			})
		}
	}
}
