package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/engramdb/engram/internal/vfs"
	"github.com/klauspost/compress/zstd"
)

// finishSegment pads the records of segment 1 in b (after a placeholder
// header) to whole pages, as a preallocated segment, and writes the
// header naming that size.
func finishSegment(b []byte) []byte {
	size := max(preallocSize(int64(len(b))), PageSize)
	b = append(b, make([]byte, size-int64(len(b)))...)
	copy(b, segmentHeader(1, size))
	return b
}

// segmentBytes encodes payloads as segment 1, compressing where it helps.
func segmentBytes(tb testing.TB, payloads ...[]byte) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer enc.Close()
	b := segmentHeader(1, 0)
	for _, p := range payloads {
		stored, compressed := p, false
		if c := enc.EncodeAll(p, nil); len(c) < len(p) {
			stored, compressed = c, true
		}
		b, _, _ = appendRecord(b, int64(len(b)), compressed, stored)
	}
	return finishSegment(b)
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
			if end := r.IntactEnd(); end > int64(len(data)) || (n > 0 && end <= prev.Offset()) {
				t.Fatalf("intact end %d, data %d bytes, last record at %d", end, len(data), prev.Offset())
			}
			var ce *CorruptionError
			if err := r.Err(); err != nil && errors.As(err, &ce) {
				want := r.IntactEnd()
				if errors.Is(err, ErrTrailingBytes) {
					want = r.Size()
				}
				if ce.Offset != want {
					t.Fatalf("corruption offset %d, want %d: %v", ce.Offset, want, err)
				}
				r.dataFollows()
			}
			if r.Next() {
				t.Fatal("Next after the end returned true")
			}
		}
		checkSalvage(t, data)
	})
}

type salvaged struct {
	lsn LSN
	rec []byte
}

// checkSalvage reads data with Resync past every damage, writes hole
// fragments over each damaged stretch as Repair does, and checks that the
// patched segment reads back, without resyncing, exactly the records the
// salvage found, at increasing LSNs, each after the stretch before it.
func checkSalvage(t *testing.T, data []byte) {
	r := NewReader(bytes.NewReader(data), int64(len(data)), 1)
	patched := bytes.Clone(data)
	var got []salvaged
	var prev LSN
	for {
		for r.Next() {
			if r.LSN() <= prev && len(got) > 0 {
				t.Fatalf("salvage: LSN %v after %v", r.LSN(), prev)
			}
			prev = r.LSN()
			got = append(got, salvaged{r.LSN(), bytes.Clone(r.Record())})
		}
		from := r.IntactEnd()
		to, ok := r.Resync()
		if !ok {
			break
		}
		if to < from || to >= int64(len(data)) || (len(got) > 0 && to <= got[len(got)-1].lsn.Offset()) {
			t.Fatalf("Resync to %d after intact end %d (%d bytes)", to, from, len(data))
		}
		copy(patched[from:], holeFragments(from, to))
	}
	r = NewReader(bytes.NewReader(patched), int64(len(patched)), 1)
	i := 0
	for r.Next() {
		if i >= len(got) || r.LSN() != got[i].lsn || !bytes.Equal(r.Record(), got[i].rec) {
			t.Fatalf("patched segment: record %d at %v differs from the salvage (%d records)", i, r.LSN(), len(got))
		}
		i++
	}
	if i != len(got) {
		t.Fatalf("patched segment reads %d records, the salvage found %d: %v", i, len(got), r.Err())
	}
	if _, ok := r.Resync(); ok {
		t.Fatalf("patched segment still has intact data after damage: %v", r.Err())
	}
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
		b := segmentHeader(1, 0)
		for _, w := range want {
			b, _, _ = appendRecord(b, int64(len(b)), false, w)
		}
		b = finishSegment(b)
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
	f.Add(append(bytes.Clone(valid), payload(3, 2000)...), second) // trailing bytes
	hdr := bytes.Clone(valid)
	clear(hdr[segHeaderSize : segHeaderSize+10]) // the first record's header
	f.Add(hdr, second)
	f.Add(valid, second[:len(second)-PageSize]) // truncated
	f.Add(bad, []byte("a user's file under a segment name"))
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
			if _, err := Repair("/wal", opts, err); errors.Is(err, ErrNotWAL) || errors.Is(err, ErrVersion) {
				return // a later "segment" is not one of ours: left alone
			} else if err != nil {
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

// FuzzRepair damages one segment of a real log (a flipped byte, zeroed
// or random bytes, a truncation, appended garbage) and checks the whole
// recovery path: Open either repairs a torn tail itself or reports a
// *CorruptionError that one Repair cures; afterwards every replayed record
// is one that was appended, at its LSN, and every record whose bytes the
// damage did not touch is there.
func FuzzRepair(f *testing.F) {
	f.Add(uint64(1), uint8(0), uint32(1<<24|5000), uint16(1))
	f.Add(uint64(2), uint8(1), uint32(2<<24|300), uint16(16))
	f.Add(uint64(3), uint8(2), uint32(0<<24|33000), uint16(700))
	f.Add(uint64(4), uint8(3), uint32(3<<24|20000), uint16(0))
	f.Add(uint64(5), uint8(4), uint32(1<<24), uint16(4096))
	f.Add(uint64(6), uint8(1), uint32(2<<24|3), uint16(9))
	f.Fuzz(func(t *testing.T, seed uint64, kind uint8, at uint32, n uint16) {
		mem := vfs.NewMem()
		opts := Options{FS: mem, SegmentSize: MinSegmentSize, NoCompression: seed%2 == 0}
		l := mustOpen(t, "/wal", opts)
		rng := rand.New(rand.NewPCG(seed, 7))
		var recs []rec
		for i := range 12 {
			size := []int{0, 40, 700, 5000, 40000}[rng.IntN(5)]
			recs = appendAll(t, l, recs, payload(int(seed%1000)*100+i, size))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		newest := recs[len(recs)-1].lsn.Segment()
		seg := 1 + (at>>24)%newest
		b, err := mem.Bytes(segPath(seg))
		if err != nil {
			t.Fatal(err)
		}
		off := int64(at&0xffffff) % int64(len(b))
		from, to := off, off+int64(n) // the bytes destroyed
		switch kind % 5 {
		case 0:
			b[off] ^= byte(n) | 1
			to = off + 1
		case 1:
			clear(b[off:min(to, int64(len(b)))])
		case 2:
			for i := off; i < min(to, int64(len(b))); i++ {
				b[i] = byte(rng.Uint32())
			}
		case 3:
			b, to = b[:off], 1<<40
		case 4:
			b = append(b, payload(int(n), int(n))...)
			from, to = 0, 0
		}
		if err := mem.SetBytes(segPath(seg), b); err != nil {
			t.Fatal(err)
		}
		destroyed := func(i int) bool {
			if recs[i].lsn.Segment() != seg || to <= from {
				return false
			}
			s, e := extent(recs, i)
			return from < segHeaderSize || (s < to && from < e)
		}
		l, err = Open("/wal", opts)
		var ce *CorruptionError
		if errors.As(err, &ce) {
			if _, err := Repair("/wal", opts, err); err != nil {
				t.Fatalf("Repair(%v): %v", ce, err)
			}
			l, err = Open("/wal", opts)
			if err != nil {
				t.Fatalf("Open after Repair: %v", err)
			}
		} else if errors.Is(err, ErrNotWAL) || errors.Is(err, ErrVersion) {
			return // the magic or version byte was hit: refused, nothing written
		} else if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer l.Close()
		got := replayAll(t, l, 0)
		byLSN := map[LSN][]byte{}
		for _, r := range recs {
			byLSN[r.lsn] = r.data
		}
		seen := map[LSN]bool{}
		for _, g := range got {
			want, ok := byLSN[g.lsn]
			if !ok || !bytes.Equal(want, g.data) {
				t.Fatalf("replayed a record never appended at %v (%d bytes)", g.lsn, len(g.data))
			}
			seen[g.lsn] = true
		}
		for i, r := range recs {
			if !seen[r.lsn] && !destroyed(i) {
				t.Fatalf("record %d at %v lost, though the damage [%d, %d) in segment %d missed it", i, r.lsn, from, to, seg)
			}
		}
	})
}
