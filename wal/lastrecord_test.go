package wal

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/internal/vfs"
)

// memSnapshot returns the names and bytes of every file in dir.
func memSnapshot(t *testing.T, mem *vfs.MemFS, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	names, err := mem.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, n := range names {
		b, err := mem.Bytes(filepath.Join(dir, n))
		if err != nil {
			out[n] = "(not a file)"
			continue
		}
		out[n] = string(b)
	}
	return out
}

func sameFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// lastRecordLog writes three records into a fresh log, the last one 5000
// random bytes (several sectors), and returns them.
func lastRecordLog(t *testing.T, mem *vfs.MemFS) []rec {
	t.Helper()
	l := mustOpen(t, "/wal", Options{FS: mem, SegmentSize: MinSegmentSize, NoCompression: true})
	recs := appendAll(t, l, nil, payload(1, 300), payload(3, 700), payload(5, 5000))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestDamagedLastRecordIsNotTorn: the last record of the newest segment
// either looks like an append that stopped short (zeros where its bytes
// did not land: Open cuts it and logs that) or is whole and damaged
// afterwards (a flipped byte: Open refuses it with ErrDamagedRecord,
// writing nothing, and Repair gives it up with its bytes kept aside).
func TestDamagedLastRecordIsNotTorn(t *testing.T) {
	cases := []struct {
		name    string
		damage  func(b []byte, start, end int64)
		damaged bool // ErrDamagedRecord, not a torn tail
	}{
		{"flipped byte in the middle", func(b []byte, start, end int64) { b[(start+end)/2] ^= 0x10 }, true},
		{"flipped byte in the fragment header's checksum", func(b []byte, start, end int64) { b[start+4] ^= 1 }, true},
		{"16 bytes zeroed in the middle", func(b []byte, start, end int64) { clear(b[(start+end)/2 : (start+end)/2+16]) }, true},
		{"a sector never written", func(b []byte, start, end int64) {
			at := (start/sectorSize + 3) * sectorSize
			clear(b[at : at+sectorSize])
		}, false},
		{"the last sector never written", func(b []byte, start, end int64) { clear(b[(end-1)/sectorSize*sectorSize : end]) }, false},
		{"the last 3 bytes zeroed", func(b []byte, start, end int64) { clear(b[end-3 : end]) }, true},
		{"everything after the header never written", func(b []byte, start, end int64) { clear(b[start+fragHeader : end]) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			recs := lastRecordLog(t, mem)
			last := recs[len(recs)-1]
			start, end := last.lsn.Offset(), last.lsn.Offset()+fragHeader+int64(len(last.data))
			edit(t, mem, 1, func(b []byte) []byte { tc.damage(b, start, end); return b })
			damaged, _ := mem.Bytes(segPath(1))
			before := memSnapshot(t, mem, "/wal")
			var logBuf bytes.Buffer
			opts := Options{FS: mem, SegmentSize: MinSegmentSize, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}
			l, err := Open("/wal", opts)
			if !tc.damaged {
				if err != nil {
					t.Fatalf("Open: %v, want the torn append cut", err)
				}
				if tt := l.Recovery().TornTail; tt.Segment != 1 || tt.From != start {
					t.Fatalf("Recovery().TornTail = %+v, want the cut at %d", tt, start)
				}
				if !strings.Contains(logBuf.String(), "torn tail") {
					t.Fatalf("the cut was not logged: %q", logBuf.String())
				}
				checkRecs(t, replayAll(t, l, 0), recs[:2])
				l.Close()
				return
			}
			var ce *CorruptionError
			if !errors.As(err, &ce) || !errors.Is(err, ErrDamagedRecord) || ce.Segment != 1 || ce.Offset != start {
				t.Fatalf("Open = %v, want ErrDamagedRecord in segment 1 at %d", err, start)
			}
			if !sameFiles(before, memSnapshot(t, mem, "/wal")) {
				t.Fatal("the refused Open changed the log")
			}
			// Read-only, it is reported the same way, and nothing is written.
			ro := opts
			ro.ReadOnly = true
			if _, err := Open("/wal", ro); !errors.Is(err, ErrDamagedRecord) {
				t.Fatalf("read-only Open = %v, want ErrDamagedRecord", err)
			}
			losses, err := Repair("/wal", opts, err)
			if err != nil {
				t.Fatal(err)
			}
			if len(losses) != 1 || losses[0].From != start || losses[0].Saved == "" {
				t.Fatalf("losses %+v, want one from %d with its bytes kept", losses, start)
			}
			kept, err := mem.Bytes(filepath.Join("/wal", losses[0].Saved))
			if err != nil || !bytes.Equal(kept, damaged[start:end]) {
				t.Fatalf("%s holds %d bytes (%v), want the %d damaged ones", losses[0].Saved, len(kept), err, end-start)
			}
			if !IsLostName(losses[0].Saved) || IsSegmentName(losses[0].Saved) {
				t.Fatalf("%s is not named as kept bytes", losses[0].Saved)
			}
			l = mustOpen(t, "/wal", opts)
			checkRecs(t, replayAll(t, l, 0), recs[:2])
			more := appendAll(t, l, recs[:2], payload(7, 100))
			if more[2].lsn <= last.lsn {
				t.Fatalf("LSN %v reused after the damaged record at %v", more[2].lsn, last.lsn)
			}
			l.Close()
			l = mustOpen(t, "/wal", opts) // the kept bytes are not in its way
			checkRecs(t, replayAll(t, l, 0), more)
			l.Close()
		})
	}
}

// TestShortSegment: a segment file shorter than its header was cut
// (ErrTruncated), since segments are created whole, except after a
// version 1 segment, whose writers created the file before its header:
// there it may be one torn at creation, cut by Open with nothing lost.
func TestShortSegment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		legacy  bool // segment 1 is version 1
		version byte // in the short segment's header prefix
		keep    int
		torn    bool
	}{
		{"only segment, empty", false, 2, 0, false},
		{"after a version 2 segment, empty", false, 2, 0, false},
		{"after a version 2 segment, one byte", false, 2, 1, false},
		{"after a version 1 segment, empty", true, 1, 0, true},
		{"after a version 1 segment, a version 1 header prefix", true, 1, 5, true},
		{"after a version 1 segment, a version 2 header prefix", true, 2, 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			mem.MkdirAll("/wal", 0o700)
			var recs []rec
			short := uint32(2)
			switch {
			case tc.name == "only segment, empty":
				short = 1
			case tc.legacy:
				b, lsns := legacySegment(1, payload(2, 100))
				recs = []rec{{lsns[0], payload(2, 100)}}
				f, _ := mem.OpenFile(segPath(1), os.O_CREATE|os.O_RDWR, 0o600)
				f.Write(b)
				f.Close()
			default:
				l := mustOpen(t, "/wal", Options{FS: mem, SegmentSize: MinSegmentSize})
				recs = appendAll(t, l, nil, payload(2, 100))
				l.Close()
			}
			head := segmentHeader(short, MinSegmentSize)
			head[4] = tc.version
			f, _ := mem.OpenFile(segPath(short), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
			f.Write(head[:tc.keep])
			f.Close()
			opts := Options{FS: mem, SegmentSize: MinSegmentSize}
			l, err := Open("/wal", opts)
			if tc.torn {
				if err != nil {
					t.Fatalf("Open: %v, want a segment torn at creation cut", err)
				}
				checkRecs(t, replayAll(t, l, 0), recs)
				l.Close()
				return
			}
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("Open = %v, want ErrTruncated", err)
			}
			if _, err := Repair("/wal", opts, err); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, "/wal", opts)
			checkRecs(t, replayAll(t, l, 0), recs)
			l.Close()
		})
	}
}

// TestForeignSegmentFiles: files named like segments that are not
// segments of the log (random bytes, a directory, an empty file beyond a
// gap) are set aside by Open, never read as the log and never removed;
// read-only, they are only reported.
func TestForeignSegmentFiles(t *testing.T) {
	mem := vfs.NewMem()
	opts := Options{FS: mem, SegmentSize: MinSegmentSize}
	l := mustOpen(t, "/wal", opts)
	var recs []rec
	for i := range 3 {
		recs = appendAll(t, l, recs, payload(2*i+1, 40000)) // one segment each
	}
	l.Close()
	if recs[2].lsn.Segment() != 3 {
		t.Fatalf("layout: last record in segment %d", recs[2].lsn.Segment())
	}
	random := payload(9, 5000)
	files := map[string][]byte{"00000009": random, "00000012": nil}
	for name, b := range files {
		f, _ := mem.OpenFile(filepath.Join("/wal", name), os.O_CREATE|os.O_RDWR, 0o600)
		f.Write(b)
		f.Close()
	}
	mem.MkdirAll("/wal/00000010", 0o700)
	foreign := []string{"00000009", "00000010", "00000012"}
	segs, got, err := ListSegments(mem, "/wal")
	if err != nil || !slices.Equal(segs, []uint32{1, 2, 3}) || !slices.Equal(got, foreign) {
		t.Fatalf("ListSegments = %v, %v, %v", segs, got, err)
	}

	before := memSnapshot(t, mem, "/wal")
	ro := opts
	ro.ReadOnly = true
	l = mustOpen(t, "/wal", ro)
	checkRecs(t, replayAll(t, l, 0), recs)
	var names []string
	for _, sa := range l.Recovery().SetAside {
		if sa.NewName != "" {
			t.Fatalf("read-only Open moved %s", sa.Name)
		}
		names = append(names, sa.Name)
	}
	if !slices.Equal(names, foreign) {
		t.Fatalf("read-only Recovery().SetAside = %v, want %v", names, foreign)
	}
	l.Close()
	if !sameFiles(before, memSnapshot(t, mem, "/wal")) {
		t.Fatal("a read-only Open changed the directory")
	}

	l = mustOpen(t, "/wal", opts)
	checkRecs(t, replayAll(t, l, 0), recs)
	for _, sa := range l.Recovery().SetAside {
		want := sa.Name + ".foreign"
		if sa.Name == "00000010" {
			want = "" // a directory stays where it is
		}
		if sa.NewName != want {
			t.Fatalf("%s set aside as %q, want %q", sa.Name, sa.NewName, want)
		}
	}
	recs = appendAll(t, l, recs, payload(11, 100))
	l.Close()
	if b, err := mem.Bytes("/wal/00000009.foreign"); err != nil || !bytes.Equal(b, random) {
		t.Fatalf("00000009.foreign: %d bytes, %v", len(b), err)
	}
	l = mustOpen(t, "/wal", opts)
	checkRecs(t, replayAll(t, l, 0), recs)
	l.Close()

	// A segment of the log whose content was replaced by random bytes is
	// set aside too (its bytes stay), leaving a gap: corruption, which
	// Repair fills, losing what the segment held.
	mem.SetBytes(segPath(2), payload(13, 3000))
	_, err = Open("/wal", opts)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Segment != 2 || !errors.Is(err, ErrMissingSegment) {
		t.Fatalf("Open = %v, want segment 2 missing", err)
	}
	if _, err := Repair("/wal", opts, err); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/wal", opts)
	defer l.Close()
	checkRecs(t, replayAll(t, l, 0), []rec{recs[0], recs[2], recs[3]})
	if _, err := mem.Bytes("/wal/00000002.foreign"); err != nil {
		t.Fatal("the replaced segment's bytes were not kept")
	}
}

// TestReadOnlyOpen: a read-only log reads what a writable Open would, but
// writes nothing: a torn tail is reported, not cut (Replay stops before
// it), a missing directory is an empty log, and writes are refused.
func TestReadOnlyOpen(t *testing.T) {
	mem := vfs.NewMem()
	recs := lastRecordLog(t, mem)
	last := recs[len(recs)-1]
	edit(t, mem, 1, func(b []byte) []byte { clear(b[last.lsn.Offset()+100:]); return b })
	before := memSnapshot(t, mem, "/wal")
	opts := Options{FS: mem, SegmentSize: MinSegmentSize, ReadOnly: true}
	l := mustOpen(t, "/wal", opts)
	checkRecs(t, replayAll(t, l, 0), recs[:2])
	if tt := l.Recovery().TornTail; tt.Segment != 1 || tt.From != last.lsn.Offset() {
		t.Fatalf("TornTail = %+v", tt)
	}
	if _, err := l.Append([]byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Append = %v, want ErrReadOnly", err)
	}
	for name, err := range map[string]error{"Sync": l.Sync(), "TruncateBefore": l.TruncateBefore(makeLSN(2, 0))} {
		if !errors.Is(err, ErrReadOnly) {
			t.Fatalf("%s = %v, want ErrReadOnly", name, err)
		}
	}
	if _, err := l.Roll(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Roll = %v, want ErrReadOnly", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !sameFiles(before, memSnapshot(t, mem, "/wal")) {
		t.Fatal("a read-only Open changed the log")
	}
	l = mustOpen(t, "/none", opts)
	if l.LastLSN() != 0 || len(replayAll(t, l, 0)) != 0 {
		t.Fatal("a missing directory is not an empty log")
	}
	l.Close()
	if _, err := mem.Stat("/none"); err == nil {
		t.Fatal("a read-only Open created the directory")
	}
}
