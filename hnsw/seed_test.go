package hnsw

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
)

// TestFromView: an Index seeded from a written graph holds the same graph
// (written again, the bytes are the same), takes more inserts, and finds
// old and new vectors as well as an index built by inserting them all.
func TestFromView(t *testing.T) {
	rows, _ := clustered(3000, 32, 20, 3)
	cfg := Config{Dim: 32, Metric: quant.Cosine, Seed: 1}
	first, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rows[:2000] {
		if _, err := first.Insert(v); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := first.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	view, err := OpenView(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	seeded, err := FromView(view, Config{Dim: 32, Metric: quant.Cosine, Capacity: 3000})
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if _, err := seeded.WriteTo(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Fatal("the seeded index writes other bytes than its view")
	}
	if seeded.Quantizer() != view.Quantizer() {
		t.Fatalf("quantizer %+v, view's %+v", seeded.Quantizer(), view.Quantizer())
	}
	for i, v := range rows[2000:] {
		id, err := seeded.Insert(v)
		if err != nil {
			t.Fatal(err)
		}
		if int(id) != 2000+i {
			t.Fatalf("insert %d got id %d", i, id)
		}
	}
	// Every vector finds itself; recall@10 over queries from both parts.
	if r := selfAndRecall(t, seeded, rows, 17, 0); r < 0.95 {
		t.Errorf("recall@10 %.3f after seeding and inserting", r)
	}
}

// TestFromViewRefuses: a view with tombstones, a config that does not
// match, and damaged bytes are refused.
func TestFromViewRefuses(t *testing.T) {
	rows, _ := clustered(300, 16, 5, 4)
	ix, _ := New(Config{Dim: 16, Metric: quant.L2})
	for _, v := range rows {
		_, _ = ix.Insert(v)
	}
	var buf bytes.Buffer
	_, _ = ix.WriteTo(&buf)
	view, err := OpenView(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{{Dim: 8, Metric: quant.L2}, {Dim: 16, Metric: quant.Cosine}, {Dim: 16, Metric: quant.L2, M: 8}} {
		if _, err := FromView(view, cfg); !errors.Is(err, ErrBadArgument) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	damaged := bytes.Clone(buf.Bytes())
	damaged[len(damaged)-3] ^= 0x40 // in the last section (flags)
	if v, err := OpenViewUnverified(damaged); err != nil {
		t.Fatal(err)
	} else if _, err := FromView(v, Config{Dim: 16, Metric: quant.L2}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("damaged view: %v", err)
	}
	_ = ix.Delete(7)
	buf.Reset()
	_, _ = ix.WriteTo(&buf)
	if v, err := OpenView(buf.Bytes()); err != nil {
		t.Fatal(err)
	} else if _, err := FromView(v, Config{Dim: 16, Metric: quant.L2}); !errors.Is(err, ErrBadArgument) {
		t.Errorf("view with a tombstone: %v", err)
	}
}

// selfAndRecall queries ix (built over rows, cosine) with every step-th row:
// each must find itself first, but for at most misses of them; it returns
// recall@10 against brute force.
func selfAndRecall(t *testing.T, ix *Index, rows [][]float32, step, misses int) float64 {
	t.Helper()
	var hit, want int
	for qi := 0; qi < len(rows); qi += step {
		got, err := ix.Search(rows[qi], 10, SearchOptions{Ef: 64})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || got[0].ID != uint32(qi) {
			if misses == 0 {
				t.Fatalf("query %d: %v", qi, got)
			}
			misses--
		}
		truth := bruteForce(quant.Cosine, rows, rows[qi], 10, nil)
		for _, r := range got {
			if slices.Contains(truth, r.ID) {
				hit++
			}
		}
		want += len(truth)
	}
	return float64(hit) / float64(want)
}
