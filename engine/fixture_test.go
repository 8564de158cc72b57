package engine

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

// testdata/store-v2 is a store written by the build before self-describing
// segments (segment format version 2: columnar metadata, no record
// checksums, an info section without the WAL position). Every later build
// must open it and return the same records. ENGRAM_WRITE_FIXTURE=1
// rewrites it with the current build (only ever do that in the commit that
// introduced it).
const fixtureV2 = "testdata/store-v2"

// fixtureRecords are the records of the fixture: 60 written and flushed,
// r00010..r00014 deleted, r00020 touched (count 3 at 5000s), then 10 more
// (r00060..r00069) left in the WAL.
func fixtureRecords() []Record {
	recs := mkRecords(rand.New(rand.NewPCG(42, 43)), 8, 0, 70)
	for i := range recs {
		recs[i].Meta["at"] = Time(time.Unix(int64(3000+i), 0).UTC())
		recs[i].Meta["score"] = Float(float64(i) / 4)
	}
	return recs
}

func fixtureLive() map[string]Record {
	live := map[string]Record{}
	for _, r := range fixtureRecords() {
		live[r.ID] = r
	}
	for i := 10; i < 15; i++ {
		delete(live, mkID(i))
	}
	return live
}

func mkID(i int) string { return mkRecords(rand.New(rand.NewPCG(1, 1)), 1, i, 1)[0].ID }

func TestWriteFixtureV2(t *testing.T) {
	if os.Getenv("ENGRAM_WRITE_FIXTURE") != "1" {
		t.Skip("set ENGRAM_WRITE_FIXTURE=1 to rewrite " + fixtureV2)
	}
	os.RemoveAll(fixtureV2)
	db := openT(t, fixtureV2, testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.Cosine, Fingerprint: "fp-v2"})
	if err != nil {
		t.Fatal(err)
	}
	recs := fixtureRecords()
	if err := c.Upsert(ctx, recs[:60]); err != nil {
		t.Fatal(err)
	}
	// An overwrite inside the memtable leaves a dead node in the file.
	if err := c.Upsert(ctx, recs[5:6]); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(mkID(10), mkID(11), mkID(12), mkID(13), mkID(14)); err != nil {
		t.Fatal(err)
	}
	if err := c.Touch([]string{mkID(20)}, time.Unix(5000, 0)); err != nil {
		t.Fatal(err)
	}
	if err := c.Touch([]string{mkID(20)}, time.Unix(5000, 0)); err != nil {
		t.Fatal(err)
	}
	if err := c.Touch([]string{mkID(20)}, time.Unix(5000, 0)); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := c.Upsert(ctx, recs[60:]); err != nil {
		t.Fatal(err)
	}
	db.noCloseFlush = true
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyFixture copies a committed store into a temporary directory (tests
// must never change testdata) with the modes the engine expects.
func copyFixture(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "store")
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// checkFixtureRecords asserts that the store holds exactly the fixture's
// live records, with their texts, metadata, times and vectors.
func checkFixtureRecords(t *testing.T, db *DB) {
	t.Helper()
	c, err := db.Collection("notes")
	if err != nil {
		t.Fatal(err)
	}
	live := fixtureLive()
	n, err := c.Count(nil)
	if err != nil || n != len(live) {
		t.Fatalf("Count = %d, %v; want %d", n, err, len(live))
	}
	for id, want := range live {
		got, err := c.Get(id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		if got.Text != want.Text || !got.Created.Equal(want.Created) || !got.Updated.Equal(want.Updated) || len(got.Meta) != len(want.Meta) {
			t.Fatalf("Get(%s) = %+v, want %+v", id, got, want)
		}
		for k, v := range want.Meta {
			if !got.Meta[k].Equal(v) {
				t.Fatalf("Get(%s).Meta[%s] = %#v, want %#v", id, k, got.Meta[k], v)
			}
		}
		wv := normalized(want.Vector)
		for i := range wv {
			if d := got.Vector[i] - wv[i]; d > 1e-6 || d < -1e-6 {
				t.Fatalf("Get(%s).Vector = %v, want %v", id, got.Vector, wv)
			}
		}
		if id == mkID(20) && (got.AccessCount != 3 || !got.LastAccess.Equal(time.Unix(5000, 0))) {
			t.Fatalf("touched record: count %d last %v", got.AccessCount, got.LastAccess)
		}
	}
	hits, err := c.Search(ctx, SearchRequest{Vector: live[mkID(33)].Vector, K: 1})
	if err != nil || len(hits) != 1 || hits[0].ID != mkID(33) {
		t.Fatalf("Search for r00033's vector = %v, %v", hits, err)
	}
	th, err := c.SearchText(ctx, "r00047", 1, nil)
	if err != nil || len(th) != 1 || th[0].ID != mkID(47) {
		t.Fatalf("SearchText(r00047) = %v, %v", th, err)
	}
	sess, err := c.Count(Eq("session", String("s1")))
	want := 0
	for _, r := range live {
		if s, _ := r.Meta["session"].Str(); s == "s1" {
			want++
		}
	}
	if err != nil || sess != want {
		t.Fatalf("Count(session=s1) = %d, %v; want %d", sess, err, want)
	}
}

// TestFixtureV2 opens the version 2 store, checks it, compacts it (which
// rewrites its segments in the current version) and checks it again.
func TestFixtureV2(t *testing.T) {
	dir := copyFixture(t, fixtureV2)
	db := openT(t, dir, testOpts())
	checkFixtureRecords(t, db)
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	checkFixtureRecords(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir, testOpts())
	defer db.Close()
	checkFixtureRecords(t, db)
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	// The compacted segment and the flushed WAL tail, once one more
	// manifest supersedes the one that still names the inputs.
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	names, _ := os.ReadDir(filepath.Join(dir, "seg"))
	if len(names) != 2 || !slices.ContainsFunc(names, func(e os.DirEntry) bool { return e.Name() == segName(3) }) {
		t.Fatalf("after compaction seg/ holds %v", names)
	}
}

func normalized(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	inv := 1 / math.Sqrt(n) // as validateRecord computes it, bit for bit
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}
