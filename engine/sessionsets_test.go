package engine

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/engramdb/engram/quant"
)

// TestSessionSets: both sides of a session's searches share one cached
// set of the session's live nodes per segment; a delete in the session
// makes the next search build it anew (the deleted record is never
// returned); the cache stays within its budget; concurrent searches of one
// session agree (run it with -race too).
func TestSessionSets(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "store"), testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "c", Dim: 8, Metric: quant.Cosine})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	recs := mkRecords(r, 8, 0, 3000)
	for i := range recs {
		recs[i].Meta["session"] = String(fmt.Sprintf("s%d", i%30))
		recs[i].Text = "alpha " + recs[i].Text
	}
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	seg := c.segs[0]
	search := func(session string) (vec, text []Hit) {
		t.Helper()
		f := Eq("session", String(session))
		vec, err := c.Search(ctx, SearchRequest{Vector: recs[0].Vector, K: 200, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		text, err = c.SearchText(ctx, "alpha", 200, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range append(slices.Clone(vec), text...) {
			if !h.Record.Meta["session"].Equal(String(session)) {
				t.Fatalf("%s: hit %s of %v", session, h.ID, h.Record.Meta["session"])
			}
		}
		return vec, text
	}

	vec, text := search("s3")
	if len(vec) != 100 || len(text) != 100 {
		t.Fatalf("s3: %d vector hits, %d text hits, want 100 each", len(vec), len(text))
	}
	e := seg.sets.m["s3"]
	if e == nil || e.bits == nil || e.bits.Count() != 100 || e.ids == nil {
		t.Fatalf("s3's set not cached for both sides: %+v", e)
	}
	search("s3")
	if seg.sets.m["s3"] != e {
		t.Fatal("a repeated search rebuilt the set")
	}

	// Deletes in the session: the next searches must not see them.
	var gone []string
	for i := 3; i < 300; i += 30 {
		id := recs[i].ID
		if _, err := c.Delete(id); err != nil {
			t.Fatal(err)
		}
		gone = append(gone, id)
	}
	vec, text = search("s3")
	if len(vec) != 90 || len(text) != 90 {
		t.Fatalf("after 10 deletes: %d vector hits, %d text hits, want 90 each", len(vec), len(text))
	}
	for _, h := range append(vec, text...) {
		if slices.Contains(gone, h.ID) {
			t.Fatalf("deleted %s returned", h.ID)
		}
	}
	if seg.sets.m["s3"] == e || seg.sets.m["s3"].bits.Count() != 90 {
		t.Fatal("the set was not rebuilt after deletes")
	}

	// The budget: a segment of 3000 nodes has 376-byte bitsets.
	defer func(b int) { sessionSetBytes = b }(sessionSetBytes)
	sessionSetBytes = 8 * 376
	for s := range 30 {
		search(fmt.Sprintf("s%d", s))
		if n, nb := len(seg.sets.m), len(seg.sets.byBits); n > 8 || nb > n {
			t.Fatalf("%d sets cached (%d by bitset), budget 8", n, nb)
		}
	}

	// Concurrent searches of one session, the set built once among them.
	var wg sync.WaitGroup
	results := make([][]Hit, 8)
	errs := make([]error, 8)
	f := Eq("session", String("s29"))
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Search(ctx, SearchRequest{Vector: recs[0].Vector, K: 200, Filter: f})
			if err != nil {
				errs[g] = err
				return
			}
			x, err := c.SearchText(ctx, "alpha", 200, f)
			results[g], errs[g] = append(v, x...), err
		}()
	}
	wg.Wait()
	for g := range 8 {
		if errs[g] != nil {
			t.Fatal(errs[g])
		}
		if len(results[g]) != 200 || !slices.EqualFunc(results[g], results[0], func(a, b Hit) bool { return a.ID == b.ID && a.Score == b.Score }) {
			t.Fatalf("concurrent search %d: %d hits, or not those of search 0", g, len(results[g]))
		}
	}
}

// BenchmarkSessionRecall measures the two sides of a hybrid recall in one
// session of a 200,000-record segment (16-d, so that the per-session
// work, not the vectors, is what differs): a session holding 10%, one
// holding 1% and one of 100 records, with the session-set cache and
// without it:
//
//	go test ./engine -run XXX -bench SessionRecall -benchtime 300x
func BenchmarkSessionRecall(b *testing.B) {
	const n, dim = 200000, 16
	db, err := Open(filepath.Join(b.TempDir(), "store"), testOpts())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateCollection(CollectionConfig{Name: "c", Dim: dim, Metric: quant.Cosine})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"coffee", "tea", "berlin", "friday", "project", "deadline", "dog", "walk", "meeting", "sister"}
	for from := 0; from < n; from += 10000 {
		recs := make([]Record, 10000)
		for i := range recs {
			id := from + i
			session := fmt.Sprintf("u%d", id%2000)
			switch {
			case id%10 == 0:
				session = "heavy" // 10%
			case id%100 == 1:
				session = "medium" // 1%
			}
			text := ""
			for range 8 {
				text += words[r.IntN(len(words))] + " "
			}
			recs[i] = Record{ID: fmt.Sprintf("r%06d", id), Vector: randVec(r, dim), Text: text, Meta: Metadata{"session": String(session)}}
		}
		if err := c.Upsert(ctx, recs); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	q := randVec(r, dim)
	for _, session := range []string{"heavy", "medium", "u7"} {
		for _, cache := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/cache=%v", session, cache), func(b *testing.B) {
				defer func(v int) { sessionSetBytes = v }(sessionSetBytes)
				if !cache {
					sessionSetBytes = 0
				}
				f := Eq("session", String(session))
				for i := range b.N {
					if _, err := c.Search(ctx, SearchRequest{Vector: q, K: 10, Filter: f, IDsOnly: true}); err != nil {
						b.Fatal(err)
					}
					if _, err := c.SearchText(ctx, words[i%len(words)]+" "+words[(i+3)%len(words)], 10, f); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
