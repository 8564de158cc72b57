package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/quant"
)

// TestRun builds a store with a crowd of copies, runs the command on it and
// checks its counts; bad arguments are errors.
func TestRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	db, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.CreateCollection(engine.CollectionConfig{Name: "c", Dim: 3, Metric: quant.L2})
	if err != nil {
		t.Fatal(err)
	}
	var recs []engine.Record
	for i := range 300 {
		v := []float32{1, 2, 3}
		if i%3 == 0 {
			v = []float32{float32(i), float32(i % 7), float32(i % 11)}
		}
		recs = append(recs, engine.Record{ID: fmt.Sprintf("r%03d", i), Vector: v})
	}
	if err := c.Upsert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	out := captureStdout(t, func() error { return run([]string{"-dir", dir}) })
	if !strings.Contains(out, `"n":300`) || !strings.Contains(out, `"distinct_vectors":101`) {
		t.Fatalf("output %s", out)
	}
	for _, args := range [][]string{{}, {"-dir", filepath.Join(dir, "missing")}, {"-dir", dir, "-collection", "nope"}} {
		if err := run(args); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}

func captureStdout(t *testing.T, fn func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	err = fn()
	os.Stdout = old
	w.Close()
	b := make([]byte, 1<<16)
	n, _ := r.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[:n])
}
