package engine

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/edsrzf/mmap-go"
	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/quant"
)

func FuzzManifest(f *testing.F) {
	m := &manifest{nextFile: 9, checkpoint: 77, kv: map[string][]byte{"a": []byte("b")}, colls: []manifestColl{{
		cfg:       CollectionConfig{Name: "c", Dim: 4, Metric: quant.Dot, Fingerprint: "fp"},
		segs:      []manifestSeg{{file: 3, count: 10, size: 999, deleted: []uint32{1, 5, 9}}, {file: 4, count: 2, size: 10}},
		overrides: map[string]access{"x": {count: 3, last: 44}},
	}}}
	good := encodeManifest(m)
	f.Add(good)
	f.Add(good[:30])
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeManifest(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to bytes that decode to the same
		// encoding (varints need not be canonical in the input).
		again := encodeManifest(m)
		m2, err := decodeManifest(again)
		if err != nil {
			t.Fatalf("re-encoded manifest does not decode: %v", err)
		}
		if !bytes.Equal(encodeManifest(m2), again) {
			t.Fatalf("encoding is not stable")
		}
	})
}

func TestManifestRoundTrip(t *testing.T) {
	m := &manifest{nextFile: 9, checkpoint: 77, kv: map[string][]byte{"a": []byte("b"), "e": {}}, colls: []manifestColl{{
		cfg:       CollectionConfig{Name: "c", Dim: 4, Metric: quant.Dot, Fingerprint: "fp"},
		segs:      []manifestSeg{{file: 3, count: 10, size: 999, deleted: []uint32{1, 5, 9}}},
		overrides: map[string]access{"x": {count: 3, last: 44}},
	}}}
	b := encodeManifest(m)
	got, err := decodeManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encodeManifest(got), b) || got.colls[0].segs[0].deleted[2] != 9 || got.colls[0].overrides["x"].count != 3 {
		t.Fatalf("round trip: %+v", got)
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x08
		if _, err := decodeManifest(c); err == nil {
			t.Fatalf("flip at %d not detected", i)
		}
	}
}

func FuzzWALOp(f *testing.F) {
	rec := Record{ID: "a", Vector: []float32{1, 2}, Text: "t", Meta: Metadata{"s": String("x"), "l": StringList("p", "q"),
		"f": Float(1.5), "b": Bool(true), "t": Time(time.Unix(5, 0)), "i": Int(-3)}, Created: time.Unix(9, 0)}
	for _, o := range []*walOp{
		{op: walUpsert, coll: "c", records: []Record{rec}},
		{op: walDelete, coll: "c", ids: []string{"a", "b"}},
		{op: walTouch, coll: "c", at: 5, ids: []string{"a"}, counts: []uint64{2}},
		{op: walCreate, cfg: CollectionConfig{Name: "c", Dim: 2, Metric: quant.L2}},
		{op: walKVPut, key: "k", value: []byte("v")},
	} {
		f.Add(encodeOp(o))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := decodeOp(b)
		if err != nil {
			return
		}
		// Non-canonical varints decode too, so compare encodings after
		// one round trip.
		again := encodeOp(o)
		o2, err := decodeOp(again)
		if err != nil {
			t.Fatalf("re-encoded op does not decode: %v", err)
		}
		if !bytes.Equal(encodeOp(o2), again) {
			t.Fatalf("encoding is not stable")
		}
	})
}

func FuzzMetadata(f *testing.F) {
	var e enc
	appendMeta(&e, Metadata{"s": String("x"), "l": StringList("p", "q"), "f": Float(1.5), "i": Int(7)})
	f.Add(e.b, "l")
	f.Fuzz(func(t *testing.T, b []byte, key string) {
		v, ok := lookupMeta(b, key)
		d := dec{b: b}
		m := readMeta(&d)
		if d.err == nil && ok {
			if w, found := m[key]; !found || !w.Equal(v) && w.kind != KindFloat {
				t.Fatalf("lookupMeta and readMeta disagree on %q", key)
			}
		}
	})
}

// segmentBytes builds a small valid segment in memory.
func segmentBytes(t testing.TB) ([]byte, CollectionConfig, int) {
	return segmentBytesVersion(t, segVersion)
}

func segmentBytesVersion(t testing.TB, version uint32) ([]byte, CollectionConfig, int) {
	cfg := CollectionConfig{Name: "c", Dim: 4, Metric: quant.L2, Fingerprint: "f"}
	opts := Options{}.withDefaults()
	m, err := newMemtable(cfg, &opts)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, rec := range mkRecords(r, 4, 0, 30) {
		v := rec.Vector
		if err := m.insert(rec, v); err != nil {
			t.Fatal(err)
		}
	}
	m.remove("r00003")
	var buf bytes.Buffer
	if _, err := streamSegment(&buf, buildSectionsVersion(cfg, m, "session", version, segWrite{})); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), cfg, len(m.recs)
}

func FuzzSegment(f *testing.F) {
	good, cfg, n := segmentBytes(f)
	f.Add(good)
	v1, _, _ := segmentBytesVersion(f, segVersionV1) // the row layout still opens
	f.Add(v1)
	v2, _, _ := segmentBytesVersion(f, segVersionV2) // no sums, the short info section
	f.Add(v2)
	v3, _, _ := segmentBytesVersion(f, segVersionV3) // no chunk checksums
	f.Add(v3)
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := parseInfo(b, segVersion); err == nil && len(h.dead) > int(h.count) {
			t.Fatalf("info with %d dead of %d nodes", len(h.dead), h.count)
		}
		secs, entries, err := parseSegment(b)
		if err != nil {
			return
		}
		s := &segment{sf: &segFile{path: "fuzz", data: mmap.MMap(b), sections: secs, entries: entries}, cfg: cfg}
		if err := s.init(uint32(n), false); err != nil {
			return
		}
		// Reads of damaged bytes may fail but must not panic; a search
		// checks the chunks it read (version 4).
		q := make([]float32, cfg.Dim)
		q[0] = 1
		_, _ = s.view.Search(q, 3, hnsw.SearchOptions{})
		_, _ = s.view.CheckedVector(2)
		_ = s.check()
		s.find("r00007")
		s.namespace("session", "s1")
		for node := uint32(0); node < uint32(s.n); node++ {
			s.record(node, nil, true, true)
		}
	})
}

func TestSegmentReadBack(t *testing.T) {
	b, cfg, n := segmentBytes(t)
	secs, entries, err := parseSegment(b)
	if err != nil {
		t.Fatal(err)
	}
	s := &segment{sf: &segFile{path: "mem", data: mmap.MMap(b), sections: secs, entries: entries}, cfg: cfg}
	if err := s.init(uint32(n), true); err != nil {
		t.Fatal(err)
	}
	s.markDeleted(3)
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.find("r00003"); ok {
		t.Fatal("dead record found in the id map")
	}
	node, ok := s.find("r00017")
	if !ok {
		t.Fatal("r00017 not found")
	}
	rec, err := s.record(node, map[string]access{"r00017": {count: 4, last: 99}}, true, true)
	if err != nil || rec.ID != "r00017" || rec.Text != "text of r00017 about topic 3" || rec.AccessCount != 4 || len(rec.Vector) != 4 ||
		!rec.Meta["n"].Equal(Int(17)) {
		t.Fatalf("record = %+v, %v", rec, err)
	}
	nodes, err := s.namespace("session", "s2")
	if err != nil || len(nodes) != 10 {
		t.Fatalf("namespace s2 = %v, %v", nodes, err)
	}
}

// memSegment writes m as a segment into memory and opens it.
func memSegment(t *testing.T, cfg CollectionConfig, m *memtable) *segment {
	t.Helper()
	var buf bytes.Buffer
	if _, err := streamSegment(&buf, buildSections(cfg, m, "session", segWrite{})); err != nil {
		t.Fatal(err)
	}
	secs, entries, err := parseSegment(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	s := &segment{sf: &segFile{path: "mem", data: mmap.MMap(buf.Bytes()), sections: secs, entries: entries}, cfg: cfg}
	if err := s.init(uint32(len(m.recs)), true); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCheckReachable shows the reachability probe failing on a graph that
// does not return the records the id map says are live (here: graph
// tombstones the engine does not know about).
func TestCheckReachable(t *testing.T) {
	cfg := CollectionConfig{Name: "c", Dim: 4, Metric: quant.L2, Fingerprint: "f"}
	opts := Options{}.withDefaults()
	m, _ := newMemtable(cfg, &opts)
	r := rand.New(rand.NewPCG(3, 3))
	for _, rec := range mkRecords(r, 4, 0, 40) {
		if err := m.insert(rec, rec.Vector); err != nil {
			t.Fatal(err)
		}
	}
	if err := memSegment(t, cfg, m).checkReachable(); err != nil {
		t.Fatalf("healthy graph: %v", err)
	}
	for node := uint32(0); node < 30; node++ {
		m.idx.Delete(node)
	}
	var ce *CorruptionError
	if err := memSegment(t, cfg, m).checkReachable(); !errors.As(err, &ce) {
		t.Fatalf("graph hiding 30 of 40 live nodes passed the probe: %v", err)
	}
}

// TestCheckReachableDuplicates: graphs over many identical vectors, and
// Dot over vectors of varied norms, used to leave live nodes cut off from
// the entry point (hnsw now links them all before a segment is written):
// the full walk of every segment must reach every live node.
func TestCheckReachableDuplicates(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, metric := range []quant.Metric{quant.Dot, quant.Cosine, quant.L2} {
		cfg := CollectionConfig{Name: "c", Dim: 4, Metric: metric}
		opts := Options{}.withDefaults()
		m, _ := newMemtable(cfg, &opts)
		for i, rec := range mkRecords(r, 4, 0, 600) {
			switch {
			case i%2 == 0:
				rec.Vector = []float32{1, 2, 3, 4}
			case metric == quant.Dot:
				scale := 0.1 + 3*r.Float32()
				for j := range rec.Vector {
					rec.Vector[j] *= scale
				}
			}
			if err := m.insert(rec, rec.Vector); err != nil {
				t.Fatal(err)
			}
		}
		if err := memSegment(t, cfg, m).check(); err != nil {
			t.Fatalf("%v: %v", metric, err)
		}
	}
}

// stripLinks returns the segment bytes b with every adjacency list of the
// graph emptied (hnsw.StripLinks) and every checksum recomputed: a file
// that passes every check except the walk, which reaches the entry point
// alone.
func stripLinks(t *testing.T, b []byte) []byte {
	t.Helper()
	secs, entries, err := parseSegment(b)
	if err != nil {
		t.Fatal(err)
	}
	g, err := hnsw.StripLinks(secs[secGraph])
	if err != nil {
		t.Fatal(err)
	}
	var sections []section
	for _, e := range entries {
		data := secs[e.kind]
		if e.kind == secGraph {
			data = g
		}
		sections = append(sections, section{kind: e.kind, write: func(w io.Writer) error { _, err := w.Write(data); return err }})
	}
	var buf bytes.Buffer
	if _, err := streamSegment(&buf, sections); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// unlinkGraph rewrites the segment file at path with stripLinks.
func unlinkGraph(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, stripLinks(t, b), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCheckReachableWalk: with every adjacency list emptied only the entry
// point is reached, and the walk says how many live nodes it missed.
func TestCheckReachableWalk(t *testing.T) {
	cfg := CollectionConfig{Name: "c", Dim: 4, Metric: quant.L2, Fingerprint: "f"}
	opts := Options{}.withDefaults()
	m, _ := newMemtable(cfg, &opts)
	r := rand.New(rand.NewPCG(5, 5))
	for _, rec := range mkRecords(r, 4, 0, 100) {
		if err := m.insert(rec, rec.Vector); err != nil {
			t.Fatal(err)
		}
	}
	s := memSegment(t, cfg, m)
	s.markDeleted(7)
	if err := s.checkReachable(); err != nil {
		t.Fatalf("healthy graph: %v", err)
	}
	stripped := openSegmentBytes(t, stripLinks(t, s.sf.data), cfg, 100)
	stripped.markDeleted(7)
	var ue *UnreachableError
	if err := stripped.checkReachable(); !errors.As(err, &ue) || ue.Unreachable < 98 || ue.Live != 99 {
		t.Fatalf("emptied graph: %v", err)
	}
}

// openSegmentBytes opens segment bytes held in memory (verifying them).
func openSegmentBytes(t *testing.T, b []byte, cfg CollectionConfig, n int) *segment {
	t.Helper()
	secs, entries, err := parseSegment(b)
	if err != nil {
		t.Fatal(err)
	}
	s := &segment{sf: &segFile{path: "mem", data: mmap.MMap(b), sections: secs, entries: entries}, cfg: cfg}
	if err := s.init(uint32(n), true); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestUnreachableIsNotDamage: a store whose graph misses live records
// (its lists emptied, checksums intact) reports *UnreachableError from
// Check after every other check passed, Repair keeps the segment and its
// records, and Compact rebuilds the graph.
func TestUnreachableIsNotDamage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	db := openT(t, dir, testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "c", Dim: 4, Metric: quant.Dot})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Upsert(ctx, mkRecords(rand.New(rand.NewPCG(4, 4)), 4, 0, 400)); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Check(); err != nil {
		t.Fatalf("fresh store: %v", err)
	}
	db.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "seg", "*.seg"))
	if len(segs) != 1 {
		t.Fatalf("segments %v, want one", segs)
	}
	unlinkGraph(t, segs[0])
	db = openT(t, dir, testOpts())
	var ue *UnreachableError
	var ce *CorruptionError
	err = db.Check()
	if !errors.As(err, &ue) || errors.As(err, &ce) || ue.Unreachable != 399 {
		t.Fatalf("Check = %v, want an *UnreachableError", err)
	}
	db.Close()
	rep, err := Repair(dir, Options{})
	if err != nil || len(rep.QuarantinedSegments) != 0 || rep.DroppedRecords != 0 {
		t.Fatalf("Repair = %+v, %v", rep, err)
	}
	db = openT(t, dir, testOpts())
	defer db.Close()
	c, _ = db.Collection("c")
	if n, err := c.Count(nil); err != nil || n != 400 {
		t.Fatalf("after Repair: %d records, %v", n, err)
	}
	// Compact rewrites the segment, and the new graph reaches every record.
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := db.Check(); err != nil {
		t.Fatalf("after Compact: %v", err)
	}
	if n, err := c.Count(nil); err != nil || n != 400 {
		t.Fatalf("after Compact: %d records, %v", n, err)
	}
}

// FuzzSalvage: Repair's salvage reads any bytes without panicking, and
// never counts more records than the file holds; seeded with damaged
// tables and trailers, so that it reaches locateSections.
func FuzzSalvage(f *testing.F) {
	good, cfg, n := segmentBytes(f)
	f.Add(good)
	v1, _, _ := segmentBytesVersion(f, segVersionV1)
	f.Add(v1)
	f.Add(good[:len(good)/2])
	f.Add(append(bytes.Clone(good), 1, 2, 3))
	// A damaged table or trailer: the sections are located by their own
	// checksums (locateSections).
	tableOff := int(le.Uint64(good[len(good)-segTrailer:]))
	for _, at := range []int{tableOff, tableOff + 4 + 5*segEntrySize + 8, tableOff + 4 + 2*segEntrySize + 24, len(good) - segTrailer + 12} {
		b := bytes.Clone(good)
		b[at] ^= 0x20
		f.Add(b)
	}
	zeroed := bytes.Clone(good)
	clear(zeroed[len(zeroed)-segTrailer : len(zeroed)-8])
	f.Add(zeroed)
	f.Fuzz(func(t *testing.T, b []byte) {
		sv := salvageBytes(b, "fuzz", cfg, manifestSeg{count: uint32(n), deleted: []uint32{3}})
		if got := len(sv.intact) + len(sv.lost) + sv.unknown; got > n-1 {
			t.Fatalf("salvage counted %d records of %d live", got, n-1)
		}
	})
}

// FuzzSegInfo: the info section decoder (what readSegHeader and a
// manifest rebuild trust) never panics and never returns more dead nodes
// than nodes, unsorted dead nodes or unsorted replaced files.
func FuzzSegInfo(f *testing.F) {
	cfg := CollectionConfig{Name: "c", Dim: 4, Metric: quant.L2, Fingerprint: "f"}
	f.Add(encodeInfo(cfg, 10, []uint32{1, 5}, segWrite{file: 7, lsn: 1<<32 | 99, replaces: []uint64{2, 3}}))
	f.Add(encodeInfo(cfg, 0, nil, segWrite{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseInfo(b, segVersion)
		if err != nil {
			return
		}
		if len(h.dead) > int(h.count) || !slices.IsSorted(h.dead) || !slices.IsSorted(h.replaces) {
			t.Fatalf("header %+v", h)
		}
		for _, d := range h.dead {
			if d >= h.count {
				t.Fatalf("dead node %d of %d", d, h.count)
			}
		}
	})
}
