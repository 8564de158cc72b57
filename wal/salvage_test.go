package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/internal/vfs"
)

// oneSegment writes n records of 300..600 bytes into one segment of a
// fresh log on mem and closes it.
func oneSegment(t *testing.T, mem *vfs.MemFS, n int) []rec {
	t.Helper()
	l := mustOpen(t, "/wal", Options{FS: mem, SegmentSize: MinSegmentSize, NoCompression: true})
	var recs []rec
	for i := range n {
		recs = appendAll(t, l, recs, payload(100+i, 300+i*15))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if recs[0].lsn.Segment() != recs[n-1].lsn.Segment() {
		t.Fatal("layout: records span segments")
	}
	return recs
}

func without(recs []rec, drop ...int) []rec {
	var out []rec
	for i, r := range recs {
		keep := true
		for _, d := range drop {
			keep = keep && i != d
		}
		if keep {
			out = append(out, r)
		}
	}
	return out
}

// TestSalvagePastDamagedRecord: damage to one record in the middle of the
// newest segment is corruption (intact records follow), and Repair loses
// that record only: the later ones keep their LSNs, whether the damage
// left the record's header readable (a flipped data byte: the next record
// is where the length says) or not (a zeroed header: found by scanning
// the page).
func TestSalvagePastDamagedRecord(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte, off int64)
	}{
		{"flipped data byte", func(b []byte, off int64) { b[off+fragHeader+40] ^= 0x20 }},
		{"zeroed data", func(b []byte, off int64) { clear(b[off+12 : off+28]) }},
		{"zeroed header", func(b []byte, off int64) { clear(b[off : off+16]) }},
		{"bad length", func(b []byte, off int64) { binary.BigEndian.PutUint16(b[off+1:], 3) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			recs := oneSegment(t, mem, 20)
			bad := recs[10]
			edit(t, mem, bad.lsn.Segment(), func(b []byte) []byte { tc.damage(b, bad.lsn.Offset()); return b })
			var logBuf bytes.Buffer
			opts := Options{FS: mem, SegmentSize: MinSegmentSize, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}
			_, err := Open("/wal", opts)
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.Segment != bad.lsn.Segment() || ce.Offset != bad.lsn.Offset() {
				t.Fatalf("Open = %v, want corruption at %v", err, bad.lsn)
			}
			losses, err := Repair("/wal", opts, err)
			if err != nil {
				t.Fatal(err)
			}
			if len(losses) != 1 || losses[0].LSN() != bad.lsn || losses[0].To != recs[11].lsn.Offset() {
				t.Fatalf("losses %v, want exactly record %v up to %v", losses, bad.lsn, recs[11].lsn)
			}
			if !strings.Contains(logBuf.String(), "repair gave up records") {
				t.Errorf("the loss was not logged: %s", logBuf.String())
			}
			l := mustOpen(t, "/wal", opts)
			want := without(recs, 10)
			checkRecs(t, replayAll(t, l, 0), want)
			if h := l.Holes(); len(h) != 1 || h[0] != recs[11].lsn {
				t.Errorf("Holes = %v, want the hole before %v", h, recs[11].lsn)
			}
			want = appendAll(t, l, want, payload(1, 100))
			l.Close()
			logBuf.Reset()
			l = mustOpen(t, "/wal", opts)
			checkRecs(t, replayAll(t, l, 0), want)
			l.Close()
			if logBuf.Len() != 0 {
				t.Errorf("the repaired log was repaired again: %s", logBuf.String())
			}
		})
	}
}

// TestSalvageSkipsLostContinuation: a record spanning pages whose first
// fragment is damaged loses its middle and last fragments with it (they
// are intact but belong to no readable record); the record after them is
// kept.
func TestSalvageSkipsLostContinuation(t *testing.T) {
	mem := vfs.NewMem()
	l := mustOpen(t, "/wal", Options{FS: mem, SegmentSize: 4 * PageSize, NoCompression: true})
	recs := appendAll(t, l, nil, payload(1, 500), payload(3, 2*PageSize+100), payload(5, 200), payload(7, 300))
	l.Close()
	edit(t, mem, 1, func(b []byte) []byte { b[recs[1].lsn.Offset()+fragHeader+9] ^= 1; return b })
	opts := Options{FS: mem, SegmentSize: 4 * PageSize}
	_, err := Open("/wal", opts)
	if _, err := Repair("/wal", opts, err); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/wal", opts)
	defer l.Close()
	checkRecs(t, replayAll(t, l, 0), without(recs, 1))
}

// TestTruncationIsNotATornTail: segments are created at their full size,
// so a torn append leaves zeros within it (a clean end, cut silently),
// while a file shorter than its header says was truncated: corruption,
// whose Repair names the loss and restores the segment's size.
func TestTruncationIsNotATornTail(t *testing.T) {
	mem := vfs.NewMem()
	recs := oneSegment(t, mem, 20)
	seg := recs[0].lsn.Segment()
	full, _ := mem.Bytes(segPath(seg))
	if int64(len(full)) != MinSegmentSize {
		t.Fatalf("segment is %d bytes, want preallocated %d", len(full), MinSegmentSize)
	}
	opts := Options{FS: mem, SegmentSize: MinSegmentSize}
	for _, cut := range []int64{recs[10].lsn.Offset(), recs[10].lsn.Offset() + 12} {
		// Torn: zeros from the cut on, size kept.
		torn := bytes.Clone(full)
		clear(torn[cut:])
		if err := mem.SetBytes(segPath(seg), torn); err != nil {
			t.Fatal(err)
		}
		l := mustOpen(t, "/wal", opts)
		checkRecs(t, replayAll(t, l, 0), recs[:10])
		l.Close()
		// Truncated: the same bytes, file cut short.
		if err := mem.SetBytes(segPath(seg), full[:cut]); err != nil {
			t.Fatal(err)
		}
		_, err := Open("/wal", opts)
		var ce *CorruptionError
		if !errors.As(err, &ce) || !errors.Is(err, ErrTruncated) || ce.Offset != recs[10].lsn.Offset() {
			t.Fatalf("Open of a truncated segment = %v, want ErrTruncated at %v", err, recs[10].lsn)
		}
		losses, err := Repair("/wal", opts, err)
		if err != nil {
			t.Fatal(err)
		}
		if len(losses) != 1 || losses[0].LSN() != recs[10].lsn || !errors.Is(losses[0].Err, ErrTruncated) {
			t.Fatalf("losses %v", losses)
		}
		if b, _ := mem.Bytes(segPath(seg)); int64(len(b)) != MinSegmentSize {
			t.Fatalf("repaired segment is %d bytes, want %d", len(b), MinSegmentSize)
		}
		l = mustOpen(t, "/wal", opts)
		checkRecs(t, replayAll(t, l, 0), recs[:10])
		more := appendAll(t, l, slices.Clone(recs[:10]), payload(9, 50))
		l.Close()
		l = mustOpen(t, "/wal", opts)
		checkRecs(t, replayAll(t, l, 0), more)
		l.Close()
		// Back to the 20 records for the next cut.
		for _, n := range []string{segPath(seg + 1), segPath(seg + 2)} {
			_ = mem.Remove(n)
		}
		if err := mem.SetBytes(segPath(seg), full); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGarbageAppendedCostsNothing: bytes appended after a segment's
// declared size are never read as records nor as a torn tail: Open keeps
// every record (and logs a warning), the reader reports ErrTrailingBytes
// (Check's view), and Repair cuts them off, losing nothing.
func TestGarbageAppendedCostsNothing(t *testing.T) {
	mem := vfs.NewMem()
	recs := oneSegment(t, mem, 20)
	seg := recs[0].lsn.Segment()
	edit(t, mem, seg, func(b []byte) []byte { return append(b, payload(3, 4096)...) })
	var logBuf bytes.Buffer
	opts := Options{FS: mem, SegmentSize: MinSegmentSize, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}
	l := mustOpen(t, "/wal", opts)
	checkRecs(t, replayAll(t, l, 0), recs)
	l.Close()
	if !strings.Contains(logBuf.String(), "bytes after the end of a segment") {
		t.Errorf("no warning: %q", logBuf.String())
	}
	b, _ := mem.Bytes(segPath(seg))
	r := NewReader(bytes.NewReader(b), int64(len(b)), seg)
	n := 0
	for r.Next() {
		n++
	}
	err := r.Err()
	var ce *CorruptionError
	if n != len(recs) || !errors.As(err, &ce) || !errors.Is(err, ErrTrailingBytes) || ce.Offset != MinSegmentSize {
		t.Fatalf("reader: %d records, %v", n, err)
	}
	losses, err := Repair("/wal", opts, err)
	if err != nil || len(losses) != 0 {
		t.Fatalf("Repair = %v, %v; want nothing lost", losses, err)
	}
	if b, _ := mem.Bytes(segPath(seg)); len(b) != MinSegmentSize {
		t.Fatalf("segment is %d bytes after Repair", len(b))
	}
	l = mustOpen(t, "/wal", opts)
	checkRecs(t, replayAll(t, l, 0), recs)
	l.Close()
}

// legacySegment encodes payloads as a version 1 segment: no size in the
// header, the file ending after the last record.
func legacySegment(seg uint32, payloads ...[]byte) ([]byte, []LSN) {
	h := make([]byte, segHeaderSize)
	copy(h, segMagic[:])
	h[4] = legacyVersion
	binary.BigEndian.PutUint32(h[8:], seg)
	binary.BigEndian.PutUint32(h[12:], crc32.Checksum(h[:12], castagnoli))
	var lsns []LSN
	for _, p := range payloads {
		var start int64
		h, start, _ = appendRecord(h, int64(len(h)), false, p)
		lsns = append(lsns, makeLSN(seg, start))
	}
	return h, lsns
}

// TestLegacySegmentsReadable: a log written before preallocation (format
// version 1) opens and replays; its torn tail is still cut by truncation;
// appends go to a new, preallocated segment.
func TestLegacySegmentsReadable(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/wal", 0o700); err != nil {
		t.Fatal(err)
	}
	ps := [][]byte{payload(2, 100), payload(4, 5000), payload(6, 40000), payload(8, 20)}
	b, lsns := legacySegment(1, ps...)
	b = b[:len(b)-5] // the last record is torn
	f, err := mem.OpenFile(segPath(1), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b)
	f.Sync()
	f.Close()
	mem.SyncDir("/wal")
	opts := Options{FS: mem, SegmentSize: MinSegmentSize}
	l := mustOpen(t, "/wal", opts)
	var want []rec
	for i := range 3 {
		want = append(want, rec{lsns[i], ps[i]})
	}
	checkRecs(t, replayAll(t, l, 0), want)
	want = appendAll(t, l, want, payload(10, 300))
	l.Close()
	if want[3].lsn.Segment() != 2 {
		t.Fatalf("append after a legacy segment went to segment %d", want[3].lsn.Segment())
	}
	if nb, _ := mem.Bytes(segPath(1)); int64(len(nb)) != lsns[3].Offset() {
		t.Fatalf("legacy torn tail: %d bytes, want cut at %d", len(nb), lsns[3].Offset())
	}
	if nb, _ := mem.Bytes(segPath(2)); len(nb) != MinSegmentSize || nb[4] != formatVersion {
		t.Fatalf("new segment: %d bytes, version %d", len(nb), nb[4])
	}
	l = mustOpen(t, "/wal", opts)
	checkRecs(t, replayAll(t, l, 0), want)
	l.Close()
}

// TestSegmentCreationIsAtomic: a crash while a segment is being created
// leaves at most its temporary, which Open neither takes for a segment nor
// for a foreign file, and the next creation reuses.
func TestSegmentCreationIsAtomic(t *testing.T) {
	mem := vfs.NewMem()
	opts := Options{FS: mem, SegmentSize: MinSegmentSize}
	l := mustOpen(t, "/wal", opts)
	recs := appendAll(t, l, nil, payload(1, 100))
	mem.InjectError(vfs.OpRename, "00000002", 0, errors.New("crash"))
	if _, err := l.Roll(); err == nil {
		t.Fatal("Roll succeeded through a failed rename")
	}
	l.Close()
	crashed := mem.Crash()
	names, _ := crashed.ReadDir("/wal")
	for _, n := range names {
		if n == "00000002" {
			t.Fatalf("segment 2 exists after its creation failed: %v", names)
		}
	}
	opts.FS = crashed
	l = mustOpen(t, "/wal", opts)
	checkRecs(t, replayAll(t, l, 0), recs)
	recs = appendAll(t, l, recs, payload(2, 100))
	l.Close()
	if recs[1].lsn.Segment() != 2 {
		t.Fatalf("next record in segment %d", recs[1].lsn.Segment())
	}
}
