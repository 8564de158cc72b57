package wal

import (
	"bytes"
	"errors"
	"testing"

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
