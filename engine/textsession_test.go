package engine

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
)

// TestSearchTextWithinSession: BM25 restricted to one session of many
// (the namespace postings hand keyword a short list of documents to look
// up) returns exactly what the same filter evaluated record by record
// returns, over segments, deletes and the mutable part.
func TestSearchTextWithinSession(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "store"), testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "c", Dim: 4, Metric: quant.Cosine})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	words := []string{"memory", "user", "likes", "coffee", "tea", "meeting", "friday", "project", "deadline", "berlin", "dog", "walk"}
	batch := func(from, n int) []Record {
		recs := mkRecords(r, 4, from, n)
		for i := range recs {
			text := ""
			for range 6 {
				text += words[r.IntN(len(words))] + " "
			}
			recs[i].Text = text + "common words everywhere"
			recs[i].Meta["session"] = String(fmt.Sprintf("s%d", (from+i)%50))
		}
		return recs
	}
	for round := range 3 { // two segments and a mutable part
		if err := c.Upsert(ctx, batch(round*2000, 2000)); err != nil {
			t.Fatal(err)
		}
		if round < 2 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 6000; i += 7 {
		if _, err := c.Delete(fmt.Sprintf("r%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"coffee friday", "common words", "dog walk berlin deadline", "everywhere"} {
		for _, s := range []string{"s0", "s17", "s49"} {
			pinned := Eq("session", String(s))
			same := Or(pinned, pinned) // not a namespace equality: evaluated per record
			got, err := c.SearchText(ctx, q, 10, pinned)
			if err != nil {
				t.Fatal(err)
			}
			want, err := c.SearchText(ctx, q, 10, same)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || !slices.EqualFunc(got, want, func(a, b Hit) bool { return a.Record.ID == b.Record.ID && a.Score == b.Score }) {
				t.Fatalf("%q in %s: %d hits %v, want %v", q, s, len(got), ids(got), ids(want))
			}
			for _, h := range got {
				if !h.Record.Meta["session"].Equal(String(s)) {
					t.Fatalf("%q in %s: hit %s from %v", q, s, h.Record.ID, h.Record.Meta["session"])
				}
			}
		}
	}
}

func ids(hs []Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Record.ID
	}
	return out
}
