package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edsrzf/mmap-go"
	"github.com/engramdb/engram/quant"
)

// colMemtable holds records whose metadata exercises every column shape:
// dense fields (bitmap presence), sparse ones (node lists), one field
// holding different kinds in different records, empty strings and lists,
// records without metadata, and a dead record.
func colMemtable(t testing.TB, n int) (*memtable, CollectionConfig) {
	cfg := CollectionConfig{Name: "c", Dim: 4, Metric: quant.L2, Fingerprint: "f"}
	opts := Options{}.withDefaults()
	m, err := newMemtable(cfg, &opts)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	for i, rec := range mkRecords(r, 4, 0, n) {
		switch {
		case i%11 == 0:
			rec.Meta = nil
		case i%5 == 0:
			rec.Meta["mixed"] = String(fmt.Sprint(i))
			rec.Meta["empty"] = String("")
			rec.Meta["none"] = StringList()
		case i%5 == 1:
			rec.Meta["mixed"] = Float(float64(i) / 3)
		case i%5 == 2:
			rec.Meta["mixed"] = Bool(i%2 == 0)
		default:
			rec.Meta["mixed"] = Time(time.Unix(int64(i), 5))
		}
		if i == n/2 && rec.Meta != nil {
			rec.Meta["rare"] = Int(-int64(i))
		}
		if err := m.insert(rec, rec.Vector); err != nil {
			t.Fatal(err)
		}
	}
	m.remove("r00004")
	return m, cfg
}

func openMemSegment(t testing.TB, cfg CollectionConfig, m *memtable, version uint32) *segment {
	var buf bytes.Buffer
	if _, err := streamSegment(&buf, buildSectionsVersion(cfg, m, "session", version, segWrite{})); err != nil {
		t.Fatal(err)
	}
	if v := le.Uint32(buf.Bytes()[8:]); v != version {
		t.Fatalf("wrote version %d, want %d", v, version)
	}
	secs, entries, err := parseSegment(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	s := &segment{sf: &segFile{path: "mem", data: mmap.MMap(buf.Bytes()), sections: secs, entries: entries}, cfg: cfg}
	if err := s.init(uint32(len(m.recs)), true); err != nil {
		t.Fatal(err)
	}
	s.markDeleted(4)
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestColumnsMatchRecords: version 2 (columns) and version 1 (rows)
// segments of the same records return the same metadata for every node
// and the same filter results, equal to the memtable's.
func TestColumnsMatchRecords(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, 300} {
		m, cfg := colMemtable(t, n)
		v2 := openMemSegment(t, cfg, m, segVersion)
		v1 := openMemSegment(t, cfg, m, segVersionV1)
		if v2.rows != nil || v1.cols != nil || (n >= 64 && len(v2.cols) < 6) {
			t.Fatalf("n=%d: v2 rows %v, v1 cols %d, v2 cols %d", n, v2.rows != nil, len(v1.cols), len(v2.cols))
		}
		var sawList, sawBitmap bool
		for _, c := range v2.cols {
			sawList = sawList || c.nodes != nil
			sawBitmap = sawBitmap || c.words != nil
		}
		if n == 300 && !(sawList && sawBitmap) {
			t.Fatalf("n=%d: list presence %v, bitmap presence %v", n, sawList, sawBitmap)
		}
		filters := []*Filter{
			Eq("mixed", String("10")), Range("mixed", Float(1), Float(50)), Eq("mixed", Bool(true)),
			Range("mixed", Time(time.Unix(3, 0)), Time(time.Unix(200, 0))), Exists("rare"), Eq("rare", Int(-int64(n/2))),
			Eq("tags", String("m2")), Ne("tags", String("m1")), In("tags", String("zz"), String("m4")), Eq("tags", StringList("t", "m0")),
			Eq("none", String("")), Ne("session", String("s1")), Range("n", Int(10), Int(40)), Eq("empty", String("")),
			Exists("none"), And(Exists("mixed"), Not(Eq("session", String("s0")))), Exists("zz"), Eq("a", String("x")),
		}
		for node := uint32(0); node < uint32(len(m.recs)); node++ {
			if m.recs[node].dead {
				continue
			}
			want := m.recs[node].rec.Meta
			for _, s := range []*segment{v2, v1} {
				rec, err := s.record(node, nil, false, false)
				if err != nil {
					t.Fatal(err)
				}
				if len(rec.Meta) != len(want) {
					t.Fatalf("n=%d node %d: meta %v, want %v", n, node, rec.Meta, want)
				}
				for k, v := range want {
					if !rec.Meta[k].Equal(v) {
						t.Fatalf("n=%d node %d field %q: %#v, want %#v", n, node, k, rec.Meta[k], v)
					}
				}
				for _, f := range filters {
					exp := f.match(m.getter(node))
					if got := f.match(s.getter(node)); got != exp {
						t.Fatalf("n=%d node %d %v: %v, memtable %v", n, node, f, got, exp)
					}
					if got := s.matcher(f)(node); got != exp {
						t.Fatalf("n=%d node %d %v: matcher %v, memtable %v", n, node, f, got, exp)
					}
				}
			}
		}
	}
}

// TestColumnsCheckDetects: Check catches column damage the per-section
// checksum would also catch, structurally (checksums recomputed).
func TestColumnsCheckDetects(t *testing.T) {
	m, _ := colMemtable(t, 200)
	good := encodeColumns(m)
	cols, err := parseColumns(good, len(m.recs))
	if err != nil || checkColumns(cols, len(m.recs)) != nil {
		t.Fatalf("good columns: %v", err)
	}
	bad := 0
	for i := 16; i < len(good); i += 7 {
		b := bytes.Clone(good)
		b[i] ^= 0x41
		cols, err := parseColumns(b, len(m.recs))
		if err != nil || checkColumns(cols, len(m.recs)) != nil {
			bad++
		}
	}
	if bad == 0 {
		t.Fatal("no flipped byte was detected")
	}
}

func FuzzColumns(f *testing.F) {
	m, _ := colMemtable(f, 70)
	f.Add(encodeColumns(m), uint16(len(m.recs)), "mixed")
	f.Add(encodeColumns(m), uint16(3), "tags")
	f.Fuzz(func(t *testing.T, b []byte, n uint16, field string) {
		n %= 130 // a few bitmap words; larger n only slows the fuzzer
		cols, err := parseColumns(b, int(n))
		if err != nil {
			return
		}
		ok := checkColumns(cols, int(n)) == nil
		filters := []*Filter{Exists(field), Eq(field, String("s1")), In(field, String("t"), String("m3")), Ne(field, String("a")), Range(field, Int(3), Float(1e9)), Not(Eq(field, Bool(true)))}
		for node := uint32(0); node < uint32(n)+2; node++ {
			meta, err := colMeta(cols, node)
			if ok && err != nil {
				t.Fatalf("checked columns fail to read node %d: %v", node, err)
			}
			for _, f := range filters {
				if got, exp := colMatcher(f, cols)(node), f.match(func(k string) (Value, bool) { return colGet(cols, node, k) }); got != exp {
					t.Fatalf("node %d %v: compiled %v, by lookup %v", node, f, got, exp)
				}
			}
			v, found := colGet(cols, node, field)
			if ok && err == nil && found != (meta[field].kind != 0) || found && err == nil && !v.Equal(meta[field]) && v.kind != KindFloat {
				t.Fatalf("node %d %q: colGet %#v %v, colMeta %#v", node, field, v, found, meta[field])
			}
		}
	})
}

// TestOpenVersion1Store: a store whose segment files were written in the
// version 1 (row metadata) layout opens, answers Get/Count like before,
// passes Check, and compaction rewrites it as version 2. A file claiming
// another version fails with ErrVersion.
func TestOpenVersion1Store(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	cfg := CollectionConfig{Name: "c", Dim: 4, Metric: quant.L2, Fingerprint: "f"}
	db := openT(t, dir, testOpts())
	c, err := db.CreateCollection(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	batches := [][]Record{mkRecords(r, 4, 0, 90), mkRecords(r, 4, 90, 70)}
	for _, b := range batches {
		if err := c.Upsert(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	filters := []*Filter{nil, Eq("tags", String("m3")), Range("n", Int(20), Int(120)), Ne("session", String("s1"))}
	want := make([]int, len(filters))
	for i, f := range filters {
		if want[i], err = c.Count(f); err != nil {
			t.Fatal(err)
		}
	}
	wantRec, _ := c.Get("r00100")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "seg", "*.seg"))
	if len(files) != 2 {
		t.Fatalf("segment files %v", files)
	}
	opts := Options{}.withDefaults()
	for i, b := range batches { // same records, same order: same nodes
		m, _ := newMemtable(cfg, &opts)
		for _, rec := range b {
			if err := m.insert(rec, rec.Vector); err != nil {
				t.Fatal(err)
			}
		}
		var buf bytes.Buffer
		if _, err := streamSegment(&buf, buildSectionsVersion(cfg, m, "session", segVersionV1, segWrite{})); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(files[i], buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db = openT(t, dir, testOpts())
	c, _ = db.Collection("c")
	verify := func(stage string) {
		t.Helper()
		for i, f := range filters {
			if got, err := c.Count(f); err != nil || got != want[i] {
				t.Fatalf("%s: Count(%v) = %d, %v; want %d", stage, f, got, err, want[i])
			}
		}
		got, err := c.Get("r00100")
		if err != nil || len(got.Meta) != len(wantRec.Meta) || !got.Meta["n"].Equal(Int(100)) || got.Text != wantRec.Text {
			t.Fatalf("%s: Get = %+v, %v", stage, got, err)
		}
		// The manifest records the version 2 files' sizes, so the
		// replaced files are checked one by one before compaction.
		check := db.Check
		if stage == "version 1" {
			check = func() error { return errors.Join(c.segs[0].check(), c.segs[1].check()) }
		}
		if err := check(); err != nil {
			t.Fatalf("%s: Check: %v", stage, err)
		}
	}
	verify("version 1")
	if c.segs[0].rows == nil {
		t.Fatal("segment not read as version 1")
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	// The previous manifest still names the replaced files with their
	// version 2 sizes; one more manifest supersedes it.
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	verify("compacted")
	for _, s := range c.segs {
		if s.rows != nil || le.Uint32(s.sf.data[8:]) != segVersion {
			t.Fatal("compaction did not write the current version")
		}
	}
	db.Close()

	b, _ := os.ReadFile(files[0])
	if len(b) == 0 {
		files, _ = filepath.Glob(filepath.Join(dir, "seg", "*.seg"))
		b, _ = os.ReadFile(files[0])
	}
	le.PutUint32(b[8:], segVersion+1)
	if _, _, err := parseSegment(b); !errors.Is(err, ErrVersion) {
		t.Fatalf("version %d: %v", segVersion+1, err)
	}
}
