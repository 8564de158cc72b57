package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

var ctx = context.Background()

func testOpts() Options {
	return Options{UnsafeNoSync: true, CompactInterval: -1, FlushBytes: -1}
}

// openT opens dir for a test and, as bbolt's test helper does, checks the
// store the test leaves behind: after the test (and its deferred Close),
// unless it failed or called leaveDamaged, the store must pass a read-only
// CheckDir, so a test that damages a store by accident fails where it did.
func openT(t testing.TB, dir string, opts Options) *DB {
	t.Helper()
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	key := checkedKey{t, dir}
	if _, seen := checkedStores.LoadOrStore(key, true); !seen {
		t.Cleanup(func() {
			defer checkedStores.Delete(key)
			if t.Failed() || t.Skipped() {
				return
			}
			if leftDamaged(t) {
				return
			}
			if err := db.Close(); err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("closing the store the test left open: %v", err)
			}
			fsys := opts.FS
			if _, err := CheckDir(dir, Options{FS: fsys, Key: opts.Key}, nil); err != nil && !errors.Is(err, ErrLocked) {
				t.Errorf("the store the test left behind fails its check: %v", err)
			}
		})
	}
	return db
}

type checkedKey struct {
	t   testing.TB
	dir string
}

var checkedStores, damagedTests sync.Map

// leaveDamaged tells openT's check that t (and its subtests) leave their
// stores damaged on purpose.
func leaveDamaged(t testing.TB) {
	damagedTests.Store(t.Name(), true)
	t.Cleanup(func() { damagedTests.Delete(t.Name()) })
}

func leftDamaged(t testing.TB) bool {
	damaged := false
	damagedTests.Range(func(k, _ any) bool {
		name := k.(string)
		damaged = t.Name() == name || strings.HasPrefix(t.Name(), name+"/")
		return !damaged
	})
	return damaged
}

func randVec(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func mkRecords(r *rand.Rand, dim, from, n int) []Record {
	out := make([]Record, n)
	for i := range out {
		id := fmt.Sprintf("r%05d", from+i)
		out[i] = Record{
			ID: id, Vector: randVec(r, dim), Text: "text of " + id + " about topic " + fmt.Sprint((from+i)%7),
			Meta: Metadata{"session": String(fmt.Sprintf("s%d", (from+i)%3)), "n": Int(int64(from + i)),
				"tags": StringList("t", fmt.Sprintf("m%d", (from+i)%5))},
			Created: time.Unix(int64(1000+from+i), 0).UTC(), Updated: time.Unix(int64(2000+from+i), 0).UTC(),
		}
	}
	return out
}

func TestBasicLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	db := openT(t, dir, testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.Cosine, Fingerprint: "fp1"})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	recs := mkRecords(r, 8, 0, 100)
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	check := func(c *Collection) {
		t.Helper()
		got, err := c.Get("r00042")
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != recs[42].Text || !got.Meta["n"].Equal(Int(42)) || !got.Created.Equal(recs[42].Created) || len(got.Vector) != 8 {
			t.Fatalf("Get = %+v", got)
		}
		hits, err := c.Search(ctx, SearchRequest{Vector: recs[7].Vector, K: 3})
		if err != nil || len(hits) != 3 || hits[0].ID != "r00007" || hits[0].Score < 0.999 {
			t.Fatalf("Search = %v, %v", hits, err)
		}
		hits, err = c.Search(ctx, SearchRequest{Vector: recs[7].Vector, K: 5, Filter: Eq("session", String("s2"))})
		if err != nil || len(hits) != 5 {
			t.Fatalf("filtered Search = %v, %v", hits, err)
		}
		for _, h := range hits {
			if s, _ := h.Record.Meta["session"].Str(); s != "s2" {
				t.Fatalf("hit %s has session %q", h.ID, s)
			}
		}
		th, err := c.SearchText(ctx, "r00013", 2, nil)
		if err != nil || len(th) == 0 || th[0].ID != "r00013" {
			t.Fatalf("SearchText = %v, %v", th, err)
		}
		th, err = c.SearchTextWith(ctx, TextRequest{Query: "topic 3", K: 50, Filter: Eq("session", String("s1")), NoText: true})
		if err != nil || len(th) == 0 {
			t.Fatalf("SearchTextWith = %v, %v", th, err)
		}
		for _, h := range th {
			if s, _ := h.Record.Meta["session"].Str(); s != "s1" || h.Record.Text != "" || h.Record.Created.IsZero() {
				t.Fatalf("text hit %+v: want session s1, no text, times set", h)
			}
		}
		hits, err = c.Search(ctx, SearchRequest{Vector: recs[7].Vector, K: 3, NoText: true})
		if err != nil || hits[0].Record.Text != "" || hits[0].Record.Meta == nil {
			t.Fatalf("NoText search = %+v, %v", hits, err)
		}
		hits, err = c.Search(ctx, SearchRequest{Vector: recs[7].Vector, K: 3, IDsOnly: true})
		if err != nil || hits[0].ID != "r00007" || hits[0].Record.ID != "" {
			t.Fatalf("IDsOnly search = %+v, %v", hits, err)
		}
		n, err := c.Count(Eq("tags", String("m1")))
		if err != nil || n != 20 {
			t.Fatalf("Count = %d, %v", n, err)
		}
	}
	check(c)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check(c)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir, testOpts())
	defer db.Close()
	c, err = db.Collection("notes")
	if err != nil {
		t.Fatal(err)
	}
	check(c)
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "seg"), filepath.Join(dir, "wal")} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("%s: mode %v, %v", p, st.Mode(), err)
		}
	}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", p, info.Mode().Perm())
		}
		return nil
	})
	_ = errors.Is
}
