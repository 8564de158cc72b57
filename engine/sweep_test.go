package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/edsrzf/mmap-go"
	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/quant"
)

// sweepSegment builds a segment of about 20 KiB: every section of the
// version present, a dead node, metadata and texts.
func sweepSegment(t *testing.T, version uint32) ([]byte, CollectionConfig, int) {
	t.Helper()
	cfg := CollectionConfig{Name: "c", Dim: 16, Metric: quant.Cosine, Fingerprint: "f"}
	opts := Options{}.withDefaults()
	m, err := newMemtable(cfg, &opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range mkRecords(rand.New(rand.NewPCG(5, 6)), 16, 0, 60) {
		if err := m.insert(rec, rec.Vector); err != nil {
			t.Fatal(err)
		}
	}
	m.remove("r00004")
	var buf bytes.Buffer
	if _, err := streamSegment(&buf, buildSectionsVersion(cfg, m, "session", version, segWrite{file: 1})); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), cfg, len(m.recs)
}

// checkSegmentBytes is what Open and Check do with one segment file: parse
// the container, open the sections (as Open: nothing verified), then the
// full check. It returns the first error.
func checkSegmentBytes(b []byte, cfg CollectionConfig, n int) error {
	secs, entries, err := parseSegment(b)
	if err != nil {
		return err
	}
	s := &segment{file: 1, sf: &segFile{path: "sweep", data: mmap.MMap(b), sections: secs, entries: entries}, cfg: cfg}
	if err := s.init(uint32(n), false); err != nil {
		return err
	}
	s.markDeleted(4)
	return s.check()
}

// TestCheckDetectsEveryByte flips one bit of every byte of a small segment
// file (bit i%8 of byte i), one byte at a time, and asserts that opening or checking it
// fails with a corruption error every single time: no byte of the file
// (header, padding, sections, tables, trailer) is outside what Check covers.
func TestCheckDetectsEveryByte(t *testing.T) {
	for _, v := range []uint32{segVersionV3, segVersion} {
		t.Run(fmt.Sprintf("version=%d", v), func(t *testing.T) { sweep(t, v) })
	}
}

func sweep(t *testing.T, version uint32) {
	good, cfg, n := sweepSegment(t, version)
	if v := le.Uint32(good[8:]); v != version {
		t.Fatalf("wrote version %d", v)
	}
	if err := checkSegmentBytes(bytes.Clone(good), cfg, n); err != nil {
		t.Fatalf("intact segment: %v", err)
	}
	if len(good) < 8<<10 || len(good) > 40<<10 {
		t.Fatalf("sweep segment of %d bytes, want a small one of 8-40 KiB", len(good))
	}
	b := bytes.Clone(good)
	var missed []int
	for i := range b {
		b[i] ^= 1 << (i % 8) // every bit position, over the file
		err := checkSegmentBytes(b, cfg, n)
		b[i] ^= 1 << (i % 8)
		var ue *UnreachableError
		if err == nil || errors.As(err, &ue) {
			missed = append(missed, i)
		}
	}
	if len(missed) > 0 {
		t.Fatalf("%d of %d byte positions with an undetected flip, first %v", len(missed), len(good), missed[:min(len(missed), 20)])
	}
	t.Logf("%d bytes: every flip detected", len(good))
}

// TestFirstQueryNeverAnswersFromDamage flips every byte of a small
// version 4 segment, one at a time, and runs what a first query after
// Open runs on it (the record sections' checksums, a vector search that
// checks the chunks it read, the hits' records with vectors): each either
// fails with a corruption error or answers exactly what the intact file
// answers.
func TestFirstQueryNeverAnswersFromDamage(t *testing.T) {
	// Rescoring reads vectors with pread from the file (pread) or, for a
	// segment without one, from the mapping: both are swept.
	for _, pread := range []bool{true, false} {
		t.Run(fmt.Sprintf("pread=%v", pread), func(t *testing.T) { firstQuerySweep(t, pread) })
	}
}

// nopCloser is a bytes.Reader as a segment's file.
type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func firstQuerySweep(t *testing.T, pread bool) {
	good, cfg, n := sweepSegment(t, segVersion)
	q := make([]float32, cfg.Dim)
	for i := range q {
		q[i] = float32(i%5) - 2
	}
	query := func(b []byte) ([]Record, error) {
		secs, entries, err := parseSegment(b)
		if err != nil {
			return nil, &CorruptionError{File: "sweep", Err: err} // as openSegFile wraps it
		}
		sf := &segFile{path: "sweep", data: mmap.MMap(b), sections: secs, entries: entries}
		if pread {
			sf.file = nopCloser{bytes.NewReader(b)}
		}
		s := &segment{file: 1, sf: sf, cfg: cfg}
		if err := s.init(uint32(n), false); err != nil {
			return nil, &CorruptionError{File: "sweep", Err: err} // as openSegment wraps it
		}
		if err := s.need(append(recordSections, secGraph)...); err != nil {
			return nil, err
		}
		hits, err := s.view.Search(q, 5, hnsw.SearchOptions{})
		if err != nil {
			return nil, err
		}
		var out []Record
		for _, h := range hits {
			r, err := s.record(h.ID, nil, true, true)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	want, err := query(bytes.Clone(good))
	if err != nil || len(want) != 5 {
		t.Fatalf("intact: %v, %v", want, err)
	}
	b := bytes.Clone(good)
	refused, answered := 0, 0
	for i := range b {
		b[i] ^= 1 << (i % 8)
		got, err := query(b)
		b[i] ^= 1 << (i % 8)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d: error %v is not a corruption error", i, err)
			}
			refused++
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("byte %d damaged: answered %v, intact %v", i, got, want)
		}
		answered++
	}
	t.Logf("%d bytes: %d first queries refused, %d answered as from the intact file", len(good), refused, answered)
	if answered == 0 {
		t.Fatal("every damaged byte refused the query: the reads are not verified piece by piece")
	}
}

// TestSalvageEveryTableByte damages every byte of a small segment file's
// section table and trailer, one at a time, three ways (one bit flipped,
// all eight flipped, 16 bytes zeroed from there on), for every version,
// and asserts that Repair's salvage still finds and proves every section
// (none is read as damaged) and keeps every live record, exactly as from
// the intact file: the table and the trailer hold nothing but where the
// sections are, and the sections prove themselves by their checksums (or,
// where an entry's checksum is what was damaged, by the trailer's checksum
// of the table).
func TestSalvageEveryTableByte(t *testing.T) {
	for _, v := range []uint32{segVersionV1, segVersionV2, segVersionV3, segVersion} {
		t.Run(fmt.Sprintf("version=%d", v), func(t *testing.T) {
			good, cfg, n := sweepSegment(t, v)
			ms := manifestSeg{count: uint32(n), deleted: []uint32{4}}
			want := salvageBytes(good, "sweep", cfg, ms)
			if len(want.intact) != n-1 || len(want.lost) != 0 || len(want.damaged) != 0 {
				t.Fatalf("intact file: %d intact, %d lost, damaged %v", len(want.intact), len(want.lost), want.damaged)
			}
			_, entries, err := parseSegment(good)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []sectionKind
			for _, e := range entries {
				kinds = append(kinds, e.kind)
			}
			if order := sectionOrder(v); !slices.Equal(kinds, order) {
				t.Fatalf("the writer's order %v, sectionOrder says %v", kinds, order)
			}
			tableOff := int(le.Uint64(good[len(good)-segTrailer:]))
			damages := []struct {
				name  string
				apply func(b []byte, p int)
			}{
				{"flip bit", func(b []byte, p int) { b[p] ^= 1 << (p % 8) }},
				{"flip byte", func(b []byte, p int) { b[p] ^= 0xff }},
				{"zero 16", func(b []byte, p int) { clear(b[p:min(p+16, len(b))]) }},
			}
			tried := 0
			for _, d := range damages {
				for p := tableOff; p < len(good); p++ {
					b := bytes.Clone(good)
					d.apply(b, p)
					got := salvageBytes(b, "sweep", cfg, ms)
					if len(got.lost) != 0 || got.unknown != 0 || len(got.damaged) != 0 || !reflect.DeepEqual(got.intact, want.intact) {
						t.Fatalf("%s at byte %d (table at %d, file %d bytes): %d intact, %d lost, %d unknown, damaged %v; want all %d intact",
							d.name, p, tableOff, len(good), len(got.intact), len(got.lost), got.unknown, got.damaged, n-1)
					}
					tried++
				}
			}
			t.Logf("%d damaged tables and trailers (%d bytes from %d): every record kept", tried, len(good)-tableOff, tableOff)
		})
	}
}
