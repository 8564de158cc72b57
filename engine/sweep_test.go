package engine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/edsrzf/mmap-go"
	"github.com/engramdb/engram/quant"
)

// sweepSegment builds a segment of the current version of about 20 KiB:
// every section present, a dead node, metadata and texts.
func sweepSegment(t *testing.T) ([]byte, CollectionConfig, int) {
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
	if _, err := streamSegment(&buf, buildSections(cfg, m, "session", segWrite{file: 1})); err != nil {
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
	good, cfg, n := sweepSegment(t)
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
