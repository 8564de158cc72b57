package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"testing"

	"github.com/engramdb/engram/internal/vfs"
	"github.com/klauspost/compress/zstd"
)

// segmentBytes encodes payloads as segment 1, compressing where it helps.
func segmentBytes(tb testing.TB, payloads ...[]byte) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer enc.Close()
	b := segmentHeader(1)
	for _, p := range payloads {
		stored, compressed := p, false
		if c := enc.EncodeAll(p, nil); len(c) < len(p) {
			stored, compressed = c, true
		}
		b, _, _ = appendRecord(b, int64(len(b)), compressed, stored)
	}
	return b
}

// FuzzReader feeds arbitrary bytes to the segment reader: it must never
// panic or read out of range, and what it returns must be consistent.
func FuzzReader(f *testing.F) {
	valid := segmentBytes(f, []byte("hello"), payload(2, 3000), payload(3, 70000), nil, payload(5, 200))
	f.Add(valid)
	f.Add(valid[:len(valid)-10])
	f.Add(valid[:PageSize+3])
	f.Add(valid[:segHeaderSize])
	f.Add(valid[:5])
	f.Add([]byte{})
	flipped := bytes.Clone(valid)
	flipped[segHeaderSize+fragHeader+2] ^= 1
	f.Add(flipped)
	f.Add(append(bytes.Clone(valid), make([]byte, PageSize)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, raw := range []bool{false, true} {
			r := NewReader(bytes.NewReader(data), int64(len(data)), 1)
			r.raw = raw
			var prev LSN
			n := 0
			for r.Next() {
				n++
				if r.LSN() <= prev && n > 1 || r.LSN().Offset() >= int64(len(data)) || r.LSN().Segment() != 1 {
					t.Fatalf("bad LSN %v after %v in %d bytes", r.LSN(), prev, len(data))
				}
				if len(r.Record()) > MaxRecordSize {
					t.Fatalf("record of %d bytes", len(r.Record()))
				}
				prev = r.LSN()
			}
			if end := r.intactEnd(); end > int64(len(data)) || (n > 0 && end <= prev.Offset()) {
				t.Fatalf("intact end %d, data %d bytes, last record at %d", end, len(data), prev.Offset())
			}
			var ce *CorruptionError
			if err := r.Err(); err != nil && errors.As(err, &ce) {
				if ce.Offset != r.intactEnd() {
					t.Fatalf("corruption offset %d, intact end %d", ce.Offset, r.intactEnd())
				}
				r.dataFollows()
			}
			if r.Next() {
				t.Fatal("Next after the end returned true")
			}
		}
	})
}

// FuzzRoundTrip checks that whatever is framed reads back identically, at
// any starting offset in a page.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("memory"), uint16(0), false)
	f.Add(payload(1, 40000), uint16(PageSize-fragHeader-segHeaderSize), true)
	f.Add([]byte{}, uint16(PageSize-segHeaderSize-3), false)
	f.Fuzz(func(t *testing.T, p []byte, pad uint16, twice bool) {
		// A filler record moves p to any offset in a page.
		want := [][]byte{make([]byte, int(pad)%PageSize), p}
		if twice {
			want = append(want, bytes.Repeat(p, 2))
		}
		b := segmentHeader(1)
		for _, w := range want {
			b, _, _ = appendRecord(b, int64(len(b)), false, w)
		}
		r := NewReader(bytes.NewReader(b), int64(len(b)), 1)
		for i, w := range want {
			if !r.Next() {
				t.Fatalf("record %d missing: %v", i, r.Err())
			}
			if !bytes.Equal(r.Record(), w) {
				t.Fatalf("record %d differs", i)
			}
		}
		if r.Next() || r.Err() != nil {
			t.Fatalf("extra record or error: %v", r.Err())
		}
	})
}

// FuzzOpen gives Open arbitrary segment files: it must not panic; a
// *CorruptionError must be cured by one Repair; then the log must accept
// appends and replay what it replayed before plus the new record.
func FuzzOpen(f *testing.F) {
	valid := segmentBytes(f, []byte("hello"), payload(2, 3000), payload(3, 40000), payload(5, 200))
	second := segmentBytes(f, []byte("second segment"))
	binary.BigEndian.PutUint32(second[8:], 2) // renumber the header
	binary.BigEndian.PutUint32(second[12:], crc32.Checksum(second[:12], castagnoli))
	f.Add(valid, second)
	f.Add(valid[:len(valid)-9], []byte(nil))
	f.Add(valid[:PageSize+20], second[:10])
	f.Add(append(bytes.Clone(valid[:100]), make([]byte, 500)...), second)
	bad := bytes.Clone(valid)
	bad[300] ^= 0x10
	f.Add(bad, second)
	f.Fuzz(func(t *testing.T, seg1, seg2 []byte) {
		mem := vfs.NewMem()
		mem.MkdirAll("/wal", 0o700)
		for i, data := range [][]byte{seg1, seg2} {
			if i == 1 && len(data) == 0 {
				break
			}
			w, err := mem.OpenFile(segPath(uint32(i+1)), os.O_CREATE|os.O_RDWR, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(data)
			w.Close()
		}
		opts := Options{FS: mem, SegmentSize: MinSegmentSize}
		l, err := Open("/wal", opts)
		var ce *CorruptionError
		if errors.As(err, &ce) {
			if err := Repair("/wal", opts, err); err != nil {
				t.Fatalf("Repair(%v): %v", ce, err)
			}
			if l, err = Open("/wal", opts); err != nil {
				t.Fatalf("Open after Repair: %v", err)
			}
		} else if err != nil {
			return // not a WAL, or an unsupported version: refused
		}
		var before []rec
		if err := l.Replay(0, func(lsn LSN, p []byte) error {
			before = append(before, rec{lsn, bytes.Clone(p)})
			return nil
		}); err != nil {
			t.Fatalf("Replay after a successful Open: %v", err)
		}
		want := appendAll(t, l, before, []byte("appended after recovery"))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, "/wal", opts)
		checkRecs(t, replayAll(t, l, 0), want)
		l.Close()
	})
}
