package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
)

// graphStore writes one segment of 400 64-d records and returns the
// store's directory, the records, the segment's path and its graph
// section's place in the file.
func graphStore(t *testing.T) (string, []Record, string, sectionEntry) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "a", Dim: 64, Metric: quant.Cosine})
	if err != nil {
		t.Fatal(err)
	}
	recs := mkRecords(rand.New(rand.NewPCG(3, 4)), 64, 0, 400)
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "seg", segName(1))
	sf, err := openSegFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.close()
	for _, e := range sf.entries {
		if e.kind == secGraph {
			return dir, recs, path, e
		}
	}
	t.Fatal("a segment without a graph section")
	return "", nil, "", sectionEntry{}
}

// damagedGraphStore writes graphStore's segment, zeroes up to 64 KiB in
// the middle of its graph section (codes, vectors and lists: derived and
// primary data both) and returns the store's directory.
func damagedGraphStore(t *testing.T) (string, []Record) {
	t.Helper()
	dir, recs, path, g := graphStore(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zero := min(64<<10, int(g.len)/2)
	from := int(g.off) + int(g.len)/2 - zero/2
	clear(b[from : from+zero])
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, recs
}

// TestUnverifiedGraphNotAnswered: a store whose graph section is partly
// zeroed opens (open reads no section body), but a vector search answers a
// typed corruption error, not a result; reads that do not need the graph
// still work.
func TestUnverifiedGraphNotAnswered(t *testing.T) {
	leaveDamaged(t)
	dir, recs := damagedGraphStore(t)
	db := openT(t, dir, testOpts())
	defer db.Close()
	c, err := db.Collection("a")
	if err != nil {
		t.Fatal(err)
	}
	var ce *CorruptionError
	for range 2 { // the verdict is kept, not recomputed into a result
		hits, err := c.Search(ctx, SearchRequest{Vector: recs[7].Vector, K: 3})
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.File != filepath.Join(dir, "seg", segName(1)) {
			t.Fatalf("Search over a damaged graph = %v, %v; want a CorruptionError naming the segment", hits, err)
		}
	}
	if _, err := c.Search(ctx, SearchRequest{Vector: recs[7].Vector, K: 3, Exact: true}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Exact search reads the damaged vectors: %v", err)
	}
	// Version 4 verifies a read's chunks only: a record whose vector
	// lies in the zeroed bytes is refused, the others are read intact.
	failed, read := 0, 0
	for _, want := range recs {
		got, err := c.Get(want.ID)
		switch {
		case errors.Is(err, ErrCorrupt):
			failed++
		case err != nil:
			t.Fatal(err)
		case !slices.Equal(got.Vector, want.Vector) && !slices.Equal(got.Vector, normalized(want.Vector)):
			t.Fatalf("Get(%s) returned a damaged vector", want.ID)
		default:
			read++
		}
	}
	if failed == 0 || read == 0 {
		t.Fatalf("Get: %d refused, %d read; want the records in the zeroed bytes refused, the rest read", failed, read)
	}
	hits, err := c.SearchText(ctx, "topic", 3, nil)
	if err != nil || len(hits) != 3 {
		t.Fatalf("SearchText does not need the graph: %v, %v", hits, err)
	}
	n := 0
	if err := c.Scan(nil, false, func(Record) bool { n++; return true }); err != nil || n != len(recs) {
		t.Fatalf("Scan without vectors: %d records, %v", n, err)
	}
}

// TestVersion3ReadAndUpgraded: a store whose segment is version 3 (no
// chunk checksums) opens and answers; damage to its graph refuses every
// vector read (the whole section is verified at the first); Compact
// rewrites an intact one as version 4 with the same answers.
func TestVersion3ReadAndUpgraded(t *testing.T) {
	leaveDamaged(t)
	writeVersion = segVersionV3
	t.Cleanup(func() { writeVersion = segVersion })
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "a", Dim: 64, Metric: quant.Cosine})
	if err != nil {
		t.Fatal(err)
	}
	recs := mkRecords(rand.New(rand.NewPCG(3, 4)), 64, 0, 400)
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	writeVersion = segVersion
	damaged := filepath.Join(t.TempDir(), "d")
	if err := os.CopyFS(damaged, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	version := func(dir string) uint32 {
		t.Helper()
		files, _ := filepath.Glob(filepath.Join(dir, "seg", "*.seg"))
		if len(files) == 0 {
			t.Fatal("no segment file")
		}
		sf, err := openSegFile(files[len(files)-1]) // the newest
		if err != nil {
			t.Fatal(err)
		}
		defer sf.close()
		return sf.version()
	}
	if v := version(dir); v != segVersionV3 {
		t.Fatalf("wrote version %d, want 3", v)
	}
	q := SearchRequest{Vector: recs[7].Vector, K: 5}
	db = openT(t, dir, testOpts())
	c, _ = db.Collection("a")
	want, err := c.Search(ctx, q)
	if err != nil || len(want) != 5 || want[0].ID != recs[7].ID {
		t.Fatalf("version 3 search: %v, %v", want, err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	got, err := c.Search(ctx, q)
	if err != nil || !slices.EqualFunc(got, want, func(a, b Hit) bool { return a.ID == b.ID }) {
		t.Fatalf("after compaction %v, %v; before %v", got, err, want)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if v := version(dir); v != segVersion {
		t.Fatalf("compaction wrote version %d, want %d", v, segVersion)
	}

	// The damaged copy: one byte of a vector far from the first nodes.
	path := filepath.Join(damaged, "seg", segName(1))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	secs, _, err := parseSegment(b)
	if err != nil {
		t.Fatal(err)
	}
	g := secs[secGraph]
	g[len(g)/3] ^= 0x10
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db = openT(t, damaged, testOpts())
	defer db.Close()
	c, _ = db.Collection("a")
	if _, err := c.Search(ctx, q); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("version 3 search over a damaged graph: %v", err)
	}
	if _, err := c.Get(recs[0].ID); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("version 3 Get over a damaged graph: %v", err)
	}
}

// TestConcurrentFirstQueries: searches racing on a freshly opened store
// verify the same chunks at once (the bitmap is shared) and all answer as
// one search alone does; on the damaged copy every answer is a corruption
// error or that same intact answer. Run it with -race.
func TestConcurrentFirstQueries(t *testing.T) {
	leaveDamaged(t)
	dir, recs := damagedGraphStore(t)
	intact := filepath.Join(t.TempDir(), "intact")
	db := openT(t, intact, testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "a", Dim: 64, Metric: quant.Cosine})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	want := make([][]Hit, 16)
	db = openT(t, intact, testOpts())
	c, _ = db.Collection("a")
	for i := range want {
		if want[i], err = c.Search(ctx, SearchRequest{Vector: recs[i*7].Vector, K: 5}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	for _, d := range []string{intact, dir} {
		db := openT(t, d, testOpts())
		c, _ := db.Collection("a")
		errs := make(chan error, len(want))
		for i := range want {
			go func() {
				got, err := c.Search(ctx, SearchRequest{Vector: recs[i*7].Vector, K: 5})
				switch {
				case err != nil && (d == intact || !errors.Is(err, ErrCorrupt)):
					errs <- err
				case err == nil && !reflect.DeepEqual(got, want[i]):
					errs <- fmt.Errorf("query %d answered %v, want %v", i, got, want[i])
				default:
					errs <- nil
				}
			}()
		}
		for range want {
			if err := <-errs; err != nil {
				t.Errorf("%s: %v", filepath.Base(d), err)
			}
		}
		db.Close()
	}
}
