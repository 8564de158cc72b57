package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/engramdb/engram/internal/vfs"
	"github.com/engramdb/engram/quant"
)

// faultFS is the OS file system with writes to paths containing match
// failing with ENOSPC while armed.
type faultFS struct {
	vfs.FS
	match string
	armed atomic.Bool
}

type faultFile struct {
	vfs.File
	fs   *faultFS
	name string
}

func (f *faultFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFile) Write(p []byte) (int, error) {
	if f.fs.armed.Load() && strings.Contains(f.name, f.fs.match) {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &fs.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

// WriteAt fails the same way: the WAL writes its preallocated segments in place.
func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.armed.Load() && strings.Contains(f.name, f.fs.match) {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, &fs.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(p, off)
}

func TestENOSPC(t *testing.T) {
	for _, match := range []string{"/wal/", ".seg", "MANIFEST"} {
		t.Run(strings.Trim(match, "/."), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			ffs := &faultFS{FS: vfs.OS, match: match}
			opts := testOpts()
			opts.UnsafeNoSync = false
			opts.FS = ffs
			db := openT(t, dir, opts)
			c, err := db.CreateCollection(CollectionConfig{Name: "a", Dim: 4, Metric: quant.L2})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(3, 4))
			acked := mkRecords(r, 4, 0, 50)
			if err := c.Upsert(ctx, acked); err != nil {
				t.Fatal(err)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			more := mkRecords(r, 4, 50, 20)
			if err := c.Upsert(ctx, more); err != nil {
				t.Fatal(err)
			}
			acked = append(acked, more...)
			ffs.armed.Store(true)
			var failed error
			if match == "/wal/" {
				failed = c.Upsert(ctx, mkRecords(r, 4, 100, 5))
			} else {
				failed = db.Flush()
			}
			if !errors.Is(failed, syscall.ENOSPC) {
				t.Fatalf("write under ENOSPC returned %v", failed)
			}
			ffs.armed.Store(false)
			if match != "/wal/" {
				// The store keeps working and a later flush succeeds.
				extra := mkRecords(r, 4, 200, 5)
				if err := c.Upsert(ctx, extra); err != nil {
					t.Fatal(err)
				}
				acked = append(acked, extra...)
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			db = openT(t, dir, testOpts())
			defer db.Close()
			if err := db.Check(); err != nil {
				t.Fatal(err)
			}
			c, err = db.Collection("a")
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range acked {
				got, err := c.Get(rec.ID)
				if err != nil || got.Text != rec.Text {
					t.Fatalf("acked %s after ENOSPC: %v %q", rec.ID, err, got.Text)
				}
			}
			names, _ := os.ReadDir(filepath.Join(dir, "seg"))
			for _, e := range names {
				if strings.HasSuffix(e.Name(), ".tmp") {
					t.Fatalf("temporary %s left after reopen", e.Name())
				}
			}
		})
	}
}

func TestCorruptSegment(t *testing.T) {
	leaveDamaged(t)
	for _, where := range []string{"table", "body"} {
		t.Run(where, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			db := openT(t, dir, testOpts())
			r := rand.New(rand.NewPCG(5, 6))
			for _, name := range []string{"a", "b"} {
				c, err := db.CreateCollection(CollectionConfig{Name: name, Dim: 4, Metric: quant.L2})
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Upsert(ctx, mkRecords(r, 4, 0, 40)); err != nil {
					t.Fatal(err)
				}
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			path := filepath.Join(dir, "seg", segName(1)) // collection a's
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sf, err := openSegFile(path)
			if err != nil {
				t.Fatal(err)
			}
			off := len(b) - segTrailer - 10 // in the section table
			if where == "body" {
				e := sf.entries[2] // the id section: not read at open
				off = int(e.off) + int(e.len) - 1
			}
			sf.close()
			b[off] ^= 0x10
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			db = openT(t, dir, testOpts())
			defer db.Close()
			var ce *CorruptionError
			_, err = db.Collection("a")
			if where == "table" {
				if !errors.As(err, &ce) || ce.File != path {
					t.Fatalf("Collection(a) = %v, want a CorruptionError naming %s", err, path)
				}
				if err := db.Flush(); !errors.As(err, &ce) {
					t.Fatalf("Flush with a damaged collection = %v", err)
				}
			} else if err != nil {
				t.Fatalf("damage outside the table is found by Check, not Open: %v", err)
			}
			if err := db.Check(); !errors.As(err, &ce) || ce.File != path || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check = %v, want a CorruptionError naming %s", err, path)
			}
			cb, err := db.Collection("b")
			if err != nil {
				t.Fatal(err)
			}
			if hits, err := cb.Search(ctx, SearchRequest{Vector: []float32{1, 0, 0, 0}, K: 3}); err != nil || len(hits) != 3 {
				t.Fatalf("other collection search: %v %v", hits, err)
			}
			if err := cb.Upsert(ctx, mkRecords(r, 4, 100, 3)); err != nil {
				t.Fatal(err)
			}
			if where == "table" {
				if err := db.DropCollection("a"); err != nil {
					t.Fatal(err)
				}
				// The previous manifest names the file until a second
				// manifest supersedes it.
				for range 2 {
					if err := db.Flush(); err != nil {
						t.Fatalf("flush after dropping the damaged collection: %v", err)
					}
				}
				if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("damaged file still there after drop and two flushes: %v", err)
				}
				if err := db.Check(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	// VerifyOnOpen finds body damage at Open.
	dir := filepath.Join(t.TempDir(), "v")
	db := openT(t, dir, testOpts())
	c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 4, Metric: quant.L2})
	c.Upsert(ctx, mkRecords(rand.New(rand.NewPCG(1, 1)), 4, 0, 10))
	db.Flush()
	db.Close()
	path := filepath.Join(dir, "seg", segName(1))
	b, _ := os.ReadFile(path)
	sf, err := openSegFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[sf.entries[3].off] ^= 1 // metadata section
	sf.close()
	os.WriteFile(path, b, 0o600)
	opts := testOpts()
	opts.VerifyOnOpen = true
	db = openT(t, dir, opts)
	defer db.Close()
	var ce *CorruptionError
	if _, err := db.Collection("a"); !errors.As(err, &ce) || ce.File != path {
		t.Fatalf("VerifyOnOpen: Collection = %v", err)
	}
}

func TestLocked(t *testing.T) {
	if dir := os.Getenv("ENGRAM_LOCK_CHILD"); dir != "" {
		_, err := Open(dir, testOpts())
		fmt.Printf("LOCKRESULT %v %v\n", errors.Is(err, ErrLocked), err)
		return
	}
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	defer db.Close()
	_, err := Open(dir, testOpts())
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Open in process = %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLocked$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ENGRAM_LOCK_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("LOCKRESULT true")) || !bytes.Contains(out, []byte(strconv.Itoa(os.Getpid()))) {
		t.Fatalf("Open from another process:\n%s", out)
	}
	// After Close the store opens again.
	db.Close()
	db2 := openT(t, dir, testOpts())
	db2.Close()
}

func TestBadInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	defer db.Close()
	c, err := db.CreateCollection(CollectionConfig{Name: "a", Dim: 3, Metric: quant.Cosine, Fingerprint: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	good := Record{ID: "x", Vector: []float32{1, 2, 3}, Text: "t"}
	if err := c.Upsert(ctx, []Record{good}); err != nil {
		t.Fatal(err)
	}
	walBefore := db.Stats().WALBytes
	bad := func(mut func(r *Record)) []Record {
		r := good.Clone()
		r.ID = "y"
		mut(&r)
		return []Record{{ID: "ok", Vector: []float32{1, 1, 1}}, r}
	}
	for name, tc := range map[string]struct {
		recs []Record
		want error
	}{
		"wrong dim":     {bad(func(r *Record) { r.Vector = []float32{1, 2} }), ErrDimension},
		"NaN":           {bad(func(r *Record) { r.Vector[0] = float32(math.NaN()) }), ErrInvalid},
		"zero cosine":   {bad(func(r *Record) { r.Vector = []float32{0, 0, 0} }), ErrInvalid},
		"empty id":      {bad(func(r *Record) { r.ID = "" }), ErrInvalid},
		"long id":       {bad(func(r *Record) { r.ID = strings.Repeat("i", MaxIDLen+1) }), ErrInvalid},
		"bad utf8 id":   {bad(func(r *Record) { r.ID = "\xff" }), ErrInvalid},
		"duplicate":     {append(bad(func(r *Record) {}), Record{ID: "y", Vector: []float32{1, 0, 0}}), ErrInvalid},
		"huge text":     {bad(func(r *Record) { r.Text = strings.Repeat("a", MaxTextLen+1) }), ErrInvalid},
		"zero value":    {bad(func(r *Record) { r.Meta = Metadata{"k": {}} }), ErrInvalid},
		"inf float":     {bad(func(r *Record) { r.Meta = Metadata{"k": Float(math.Inf(1))} }), ErrInvalid},
		"empty key":     {bad(func(r *Record) { r.Meta = Metadata{"": Int(1)} }), ErrInvalid},
		"too many keys": {bad(func(r *Record) { r.Meta = manyKeys(MaxMetaKeys + 1) }), ErrInvalid},
		"big meta":      {bad(func(r *Record) { r.Meta = Metadata{"k": String(strings.Repeat("v", MaxMetaBytes))} }), ErrInvalid},
	} {
		if err := c.Upsert(ctx, tc.recs); !errors.Is(err, tc.want) {
			t.Errorf("%s: Upsert = %v, want %v", name, err, tc.want)
		}
	}
	big := make([]Record, 1200)
	for i := range big {
		big[i] = Record{ID: fmt.Sprint("b", i), Vector: []float32{1, 2, 3}, Text: strings.Repeat("x", 4000)}
	}
	if err := c.Upsert(ctx, big); !errors.Is(err, ErrInvalid) {
		t.Errorf("batch over MaxBatchBytes: %v", err)
	}
	if n, _ := c.Count(nil); n != 1 {
		t.Fatalf("a rejected batch wrote records: count %d", n)
	}
	if db.Stats().WALBytes != walBefore {
		t.Fatalf("a rejected batch wrote to the WAL")
	}
	for name, f := range map[string]*Filter{
		"empty field":   Eq("", Int(1)),
		"zero value":    Eq("a", Value{}),
		"empty in":      In("a"),
		"no bounds":     Range("a", Value{}, Value{}),
		"mixed bounds":  Range("a", Int(1), String("x")),
		"bool bound":    Range("a", Bool(true), Value{}),
		"empty and":     And(),
		"nil child":     Or(nil),
		"zero filter":   {},
		"nan":           Eq("a", Float(math.NaN())),
		"deep":          deepFilter(40),
		"not of broken": Not(In("a")),
	} {
		if _, err := c.Search(ctx, SearchRequest{Vector: []float32{1, 0, 0}, K: 1, Filter: f}); !errors.Is(err, ErrInvalidFilter) {
			t.Errorf("%s: Search = %v, want ErrInvalidFilter", name, err)
		}
		if _, err := c.Count(f); !errors.Is(err, ErrInvalidFilter) {
			t.Errorf("%s: Count = %v", name, err)
		}
		if _, err := c.DeleteWhere(f); !errors.Is(err, ErrInvalidFilter) {
			t.Errorf("%s: DeleteWhere = %v", name, err)
		}
	}
	for name, req := range map[string]SearchRequest{
		"k0":       {Vector: []float32{1, 0, 0}, K: 0},
		"k huge":   {Vector: []float32{1, 0, 0}, K: MaxK + 1},
		"ef<k":     {Vector: []float32{1, 0, 0}, K: 10, Ef: 5},
		"dim":      {Vector: []float32{1, 0}, K: 1},
		"nan":      {Vector: []float32{float32(math.NaN()), 0, 0}, K: 1},
		"zero cos": {Vector: []float32{0, 0, 0}, K: 1},
	} {
		if _, err := c.Search(ctx, req); err == nil {
			t.Errorf("%s: Search accepted", name)
		}
	}
	if _, err := db.Collection("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown collection: %v", err)
	}
	if err := db.DropCollection("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("drop unknown: %v", err)
	}
	if _, err := db.CreateCollection(CollectionConfig{Name: "a", Dim: 4, Metric: quant.Cosine, Fingerprint: "m1"}); !errors.Is(err, ErrExists) {
		t.Errorf("create with another dim: %v", err)
	}
	if _, err := db.CreateCollection(CollectionConfig{Name: "a", Dim: 3, Metric: quant.Cosine, Fingerprint: "m2"}); !errors.Is(err, ErrExists) {
		t.Errorf("create with another fingerprint: %v", err)
	}
	for _, cfg := range []CollectionConfig{{Name: "", Dim: 3, Metric: quant.L2}, {Name: "a/b", Dim: 3, Metric: quant.L2},
		{Name: "z", Dim: 0, Metric: quant.L2}, {Name: "z", Dim: MaxDim + 1, Metric: quant.L2}, {Name: "z", Dim: 3}} {
		if _, err := db.CreateCollection(cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("CreateCollection(%+v) = %v", cfg, err)
		}
	}
	if _, err := c.Get("missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get missing: %v", err)
	}
	if _, err := db.KV().Get("missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("KV Get missing: %v", err)
	}
	if err := db.KV().Put("", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("KV empty key: %v", err)
	}
	if err := db.KV().Put("k", make([]byte, MaxKVValueLen+1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("KV big value: %v", err)
	}
	if db.Stats().WALBytes != walBefore {
		t.Fatalf("rejected calls wrote to the WAL")
	}
}

func manyKeys(n int) Metadata {
	m := Metadata{}
	for i := range n {
		m[fmt.Sprint("k", i)] = Int(int64(i))
	}
	return m
}

func deepFilter(n int) *Filter {
	f := Exists("a")
	for range n {
		f = Not(f)
	}
	return f
}

func TestOpenRefuses(t *testing.T) {
	leaveDamaged(t)
	// A directory with foreign files is not a store; nothing is written.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hi"), 0o600)
	if _, err := Open(dir, testOpts()); !errors.Is(err, ErrNotStore) {
		t.Fatalf("foreign dir: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("Open wrote into a foreign directory: %v", entries)
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	if _, err := Open(file, testOpts()); !errors.Is(err, ErrNotStore) {
		t.Fatalf("file: %v", err)
	}
	// Invalid graph options are refused before anything is written.
	odir := filepath.Join(t.TempDir(), "o")
	if _, err := Open(odir, Options{M: 1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("M=1: %v", err)
	}
	if _, err := os.Stat(odir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open with invalid options created %s", odir)
	}
	// A newer manifest version is refused without changes.
	sdir := filepath.Join(t.TempDir(), "s")
	openT(t, sdir, testOpts()).Close()
	mpath := filepath.Join(sdir, manifestFileName(1))
	b, _ := os.ReadFile(mpath)
	b[8] = manifestVersion + 1
	os.WriteFile(mpath, b, 0o600)
	if _, err := Open(sdir, testOpts()); !errors.Is(err, ErrVersion) {
		t.Fatalf("newer version: %v", err)
	}
	if after, _ := os.ReadFile(mpath); !bytes.Equal(after, b) {
		t.Fatal("Open changed a manifest it refused")
	}
	// A damaged manifest is a CorruptionError naming it.
	b[8] = manifestVersion
	b[len(b)-1] ^= 1
	os.WriteFile(mpath, b, 0o600)
	var ce *CorruptionError
	if _, err := Open(sdir, testOpts()); !errors.As(err, &ce) || ce.File != mpath || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged manifest: %v", err)
	}
}

func TestENOSPCCompact(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	ffs := &faultFS{FS: vfs.OS, match: ".seg"}
	opts := testOpts()
	opts.FS = ffs
	db := openT(t, dir, opts)
	defer db.Close()
	c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 4, Metric: quant.L2})
	r := rand.New(rand.NewPCG(7, 7))
	recs := mkRecords(r, 4, 0, 60)
	c.Upsert(ctx, recs[:30])
	db.Flush()
	c.Upsert(ctx, recs[30:])
	db.Flush()
	c.Delete("r00001", "r00040")
	ffs.armed.Store(true)
	if err := db.Compact(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Compact under ENOSPC = %v", err)
	}
	ffs.armed.Store(false)
	if st := db.Stats().Collections[0]; st.Segments != 2 || st.Records != 58 {
		t.Fatalf("after a failed compaction: %+v", st)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats().Collections[0]; st.Segments != 1 || st.Records != 58 || st.Deleted != 0 {
		t.Fatalf("after compaction: %+v", st)
	}
	// The inputs stay while the previous manifest names them: one more
	// manifest and they go.
	names, _ := os.ReadDir(filepath.Join(dir, "seg"))
	if len(names) != 3 {
		t.Fatalf("seg/ holds %d files after compaction, want the output and the 2 inputs", len(names))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	names, _ = os.ReadDir(filepath.Join(dir, "seg"))
	if len(names) != 1 {
		t.Fatalf("seg/ holds %d files after compaction and a flush, want 1", len(names))
	}
}
