package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/internal/vfs"
)

// buildLog writes records over several 64 KiB segments and returns them.
// The newest segment ends with a small record after a multi-page one.
func buildLog(t *testing.T, mem *vfs.MemFS) []rec {
	t.Helper()
	// Uncompressed so the layout does not depend on the compressor.
	l := mustOpen(t, "/wal", Options{FS: mem, SegmentSize: MinSegmentSize, NoCompression: true})
	var recs []rec
	sz := []int{200, 5001, 40001, 700, 3001}
	for i := 0; i < 24; i++ {
		recs = appendAll(t, l, recs, payload(i, sz[i%len(sz)]))
	}
	recs = appendAll(t, l, recs, payload(1001, 45001), payload(1002, 300), payload(1004, 400))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1].lsn.Segment()
	if recs[len(recs)-3].lsn.Segment() != last || last < 4 {
		t.Fatalf("layout: last three records not in newest segment %d", last)
	}
	return recs
}

func segPath(seg uint32) string { return filepath.Join("/wal", segmentName(seg)) }

func edit(t *testing.T, mem *vfs.MemFS, seg uint32, f func([]byte) []byte) {
	t.Helper()
	b, err := mem.Bytes(segPath(seg))
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.SetBytes(segPath(seg), f(b)); err != nil {
		t.Fatal(err)
	}
}

// firstIn returns the index of the first record in segment seg.
func firstIn(recs []rec, seg uint32) int {
	for i, r := range recs {
		if r.lsn.Segment() >= seg {
			return i
		}
	}
	return len(recs)
}

// extent returns the byte range of record i in its segment: from its
// LSN to the next record's (or the end of the written data).
func extent(recs []rec, i int) (int64, int64) {
	if i+1 < len(recs) && recs[i+1].lsn.Segment() == recs[i].lsn.Segment() {
		return recs[i].lsn.Offset(), recs[i+1].lsn.Offset()
	}
	return recs[i].lsn.Offset(), 1 << 40
}

// hit returns the records of segment seg whose bytes overlap [from, to):
// those a damage there destroys.
func hit(recs []rec, seg uint32, from, to int64) []int {
	var out []int
	for i, r := range recs {
		if s, e := extent(recs, i); r.lsn.Segment() == seg && s < to && from < e {
			out = append(out, i)
		}
	}
	return out
}

func inSeg(recs []rec, seg uint32) []int { return hit(recs, seg, 0, 1<<40) }

func TestCorruption(t *testing.T) {
	type result struct {
		drop    []int  // records lost: exactly those whose bytes were destroyed
		corrupt uint32 // segment Open must report as corrupt; 0 for a torn tail Open repairs itself
		silent  bool   // nothing to log: it reads as an append never made
		warns   bool   // every Open logs a warning (bytes past a segment's end)
	}
	n := func(recs []rec) int { return len(recs) }
	lastSeg := func(recs []rec) uint32 { return recs[len(recs)-1].lsn.Segment() }
	// zeroFrom zero-fills a preallocated segment from off: what a torn write leaves.
	zeroFrom := func(off int64) func(b []byte) []byte {
		return func(b []byte) []byte { clear(b[off:]); return b }
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, mem *vfs.MemFS, recs []rec) result
	}{
		{"torn last record", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			r := recs[n(recs)-1]
			edit(t, mem, r.lsn.Segment(), zeroFrom(r.lsn.Offset()+fragHeader+50))
			return result{drop: []int{n(recs) - 1}}
		}},
		{"torn record header", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			r := recs[n(recs)-1]
			edit(t, mem, r.lsn.Segment(), func(b []byte) []byte {
				clear(b[r.lsn.Offset()+3:])
				return b
			})
			return result{drop: []int{n(recs) - 1}}
		}},
		{"torn multi-page record", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			r := recs[n(recs)-3] // 45001 random bytes: first, middle, last fragments
			edit(t, mem, r.lsn.Segment(), zeroFrom((r.lsn.Offset()/PageSize+1)*PageSize+100))
			return result{drop: []int{n(recs) - 3, n(recs) - 2, n(recs) - 1}}
		}},
		{"zeroed last record", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// Indistinguishable from an append never made: dropped silently.
			r := recs[n(recs)-1]
			edit(t, mem, r.lsn.Segment(), zeroFrom(r.lsn.Offset()))
			return result{drop: []int{n(recs) - 1}, silent: true}
		}},
		{"bad CRC in last record", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// Its framing is whole and nothing in it is zeroed: not a torn
			// append but an acknowledged record damaged (ErrDamagedRecord).
			r := recs[n(recs)-1]
			edit(t, mem, r.lsn.Segment(), func(b []byte) []byte { b[r.lsn.Offset()+fragHeader+200] ^= 1; return b })
			return result{drop: []int{n(recs) - 1}, corrupt: r.lsn.Segment()}
		}},
		{"short write of the last record", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// Its last sector never landed: a torn append, cut.
			r := recs[n(recs)-1]
			end := r.lsn.Offset() + fragHeader + 400
			edit(t, mem, r.lsn.Segment(), zeroFrom(max((end-1)/512*512, r.lsn.Offset()+fragHeader)))
			return result{drop: []int{n(recs) - 1}}
		}},
		{"zeroed end of the last record", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// 9 zero bytes, less than a sector: no device tears a write
			// that way, so the complete record was damaged.
			r := recs[n(recs)-1]
			end := r.lsn.Offset() + fragHeader + 400
			if end%512 < 9 {
				t.Fatalf("layout: the record ends %d bytes into a sector", end%512)
			}
			edit(t, mem, r.lsn.Segment(), zeroFrom(end-9))
			return result{drop: []int{n(recs) - 1}, corrupt: r.lsn.Segment()}
		}},
		{"lost sector in the last multi-page record", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// The second of its pages' sectors never landed, the rest did
			// (out of order): a torn append, cut, with the records after it.
			r := recs[n(recs)-3]
			edit(t, mem, r.lsn.Segment(), func(b []byte) []byte {
				at := (r.lsn.Offset()/512 + 2) * 512
				clear(b[at : at+512])
				clear(b[recs[n(recs)-2].lsn.Offset():]) // the later appends did not land either
				return b
			})
			return result{drop: []int{n(recs) - 3, n(recs) - 2, n(recs) - 1}}
		}},
		{"garbage after the last record", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// Inside the segment's size: a torn write of random bytes looks the same.
			_, end := extent(recs, n(recs)-1)
			r := recs[n(recs)-1]
			edit(t, mem, r.lsn.Segment(), func(b []byte) []byte {
				end = min(end, int64(len(b)))
				for i := r.lsn.Offset() + fragHeader + 400 + 3; i < r.lsn.Offset()+3000 && i < int64(len(b)); i++ {
					b[i] = byte(i*7 + 1)
				}
				return b
			})
			return result{}
		}},
		{"garbage appended", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// Past the size the header gives: read as nothing, never as a torn tail.
			edit(t, mem, lastSeg(recs), func(b []byte) []byte { return append(b, payload(7, 3000)...) })
			return result{warns: true}
		}},
		{"bad CRC before intact records", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			r := recs[n(recs)-2] // followed by an intact record in the same page
			edit(t, mem, r.lsn.Segment(), func(b []byte) []byte { b[r.lsn.Offset()+fragHeader+5] ^= 0x80; return b })
			return result{drop: []int{n(recs) - 2}, corrupt: r.lsn.Segment()}
		}},
		{"bad CRC in older segment", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			i := firstIn(recs, 2) + 1
			r := recs[i]
			edit(t, mem, r.lsn.Segment(), func(b []byte) []byte { b[r.lsn.Offset()+fragHeader+20] ^= 0xff; return b })
			return result{drop: []int{i}, corrupt: r.lsn.Segment()}
		}},
		{"bad length", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			i := firstIn(recs, 3)
			r := recs[i]
			edit(t, mem, r.lsn.Segment(), func(b []byte) []byte {
				binary.BigEndian.PutUint16(b[r.lsn.Offset()+1:], 0xfff0)
				return b
			})
			return result{drop: []int{i}, corrupt: r.lsn.Segment()}
		}},
		{"bad type", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			i := firstIn(recs, 2)
			r := recs[i]
			edit(t, mem, r.lsn.Segment(), func(b []byte) []byte { b[r.lsn.Offset()] = 0x47; return b })
			return result{drop: []int{i}, corrupt: r.lsn.Segment()}
		}},
		{"garbage in the middle", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			i := firstIn(recs, 2) + 1
			r := recs[i]
			edit(t, mem, r.lsn.Segment(), func(b []byte) []byte {
				copy(b[r.lsn.Offset():], payload(9, 500))
				return b
			})
			return result{drop: hit(recs, r.lsn.Segment(), r.lsn.Offset(), r.lsn.Offset()+500), corrupt: r.lsn.Segment()}
		}},
		{"zeroed page", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// Page 1 of segment 2 holds the middle of a record that started in page 0.
			i := firstIn(recs, 3) - 1
			for recs[i].lsn.Offset() >= PageSize {
				i--
			}
			r := recs[i]
			edit(t, mem, r.lsn.Segment(), func(b []byte) []byte {
				clear(b[PageSize:min(2*PageSize, len(b))])
				return b
			})
			return result{drop: hit(recs, r.lsn.Segment(), PageSize, 2*PageSize), corrupt: r.lsn.Segment()}
		}},
		{"missing middle segment", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			if err := mem.Remove(segPath(3)); err != nil {
				t.Fatal(err)
			}
			return result{drop: inSeg(recs, 3), corrupt: 3}
		}},
		{"truncated header of newest segment", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// The version byte survives: a version 2 segment is created
			// whole, so this was cut, not torn.
			s := lastSeg(recs)
			edit(t, mem, s, func(b []byte) []byte { return b[:5] })
			return result{drop: inSeg(recs, s), corrupt: s}
		}},
		{"newest segment cut to 4 bytes", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// Too short to tell its version, but it follows a version 2
			// segment: created whole, so cut, not torn.
			s := lastSeg(recs)
			edit(t, mem, s, func(b []byte) []byte { return b[:4] })
			return result{drop: inSeg(recs, s), corrupt: s}
		}},
		{"newest segment cut to 1 byte", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			s := lastSeg(recs)
			edit(t, mem, s, func(b []byte) []byte { return b[:1] })
			return result{drop: inSeg(recs, s), corrupt: s}
		}},
		{"empty newest segment", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			s := lastSeg(recs)
			edit(t, mem, s, func(b []byte) []byte { return nil })
			return result{drop: inSeg(recs, s), corrupt: s}
		}},
		{"damaged magic of newest segment", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// Still ours (its number and records are there): the header is
			// rewritten, nothing lost.
			s := lastSeg(recs)
			edit(t, mem, s, func(b []byte) []byte { b[1] ^= 0x40; return b })
			return result{corrupt: s}
		}},
		{"truncated header of middle segment", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			edit(t, mem, 2, func(b []byte) []byte { return b[:10] })
			return result{drop: inSeg(recs, 2), corrupt: 2}
		}},
		{"bad header checksum", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// The records after the header are intact: the header is rewritten.
			edit(t, mem, 3, func(b []byte) []byte { b[6] = 9; return b })
			return result{corrupt: 3}
		}},
		{"segment renamed", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// Segment 2's content under segment 3's name: the header says 2.
			b2, _ := mem.Bytes(segPath(2))
			edit(t, mem, 3, func([]byte) []byte { return b2 })
			return result{drop: inSeg(recs, 3), corrupt: 3}
		}},
		{"truncated older segment", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			i := firstIn(recs, 3) - 1 // last record of segment 2
			r := recs[i]
			edit(t, mem, 2, func(b []byte) []byte { return b[:r.lsn.Offset()+fragHeader+10] })
			return result{drop: []int{i}, corrupt: 2}
		}},
		{"truncated newest segment at a record boundary", func(t *testing.T, mem *vfs.MemFS, recs []rec) result {
			// Not a torn tail: the file is shorter than its header says.
			r := recs[n(recs)-1]
			edit(t, mem, r.lsn.Segment(), func(b []byte) []byte { return b[:r.lsn.Offset()] })
			return result{drop: []int{n(recs) - 1}, corrupt: r.lsn.Segment()}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			recs := buildLog(t, mem)
			want := tc.damage(t, mem, recs)
			var logBuf bytes.Buffer
			opts := Options{FS: mem, SegmentSize: MinSegmentSize, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}
			l, err := Open("/wal", opts)
			var ce *CorruptionError
			switch {
			case want.corrupt == 0 && err != nil:
				t.Fatalf("Open: %v, want torn tail repaired", err)
			case want.corrupt != 0 && !errors.As(err, &ce):
				if l != nil {
					l.Close()
				}
				t.Fatalf("Open: %v, want *CorruptionError", err)
			case want.corrupt != 0 && ce.Segment != want.corrupt:
				t.Fatalf("corruption in segment %d, want %d: %v", ce.Segment, want.corrupt, err)
			case want.corrupt != 0:
				if l != nil {
					t.Fatal("Open returned a log with an error")
				}
				losses, err := Repair("/wal", opts, err)
				if err != nil {
					t.Fatalf("Repair: %v", err)
				}
				if len(want.drop) > 0 && len(losses) == 0 {
					t.Errorf("Repair reports no loss, %d records destroyed", len(want.drop))
				}
				for _, i := range want.drop { // each destroyed record lies in a reported loss
					s, _ := extent(recs, i)
					found := false
					for _, lo := range losses {
						found = found || (lo.Segment == recs[i].lsn.Segment() && lo.From <= s && s < lo.To)
					}
					if !found {
						t.Errorf("record %d (%v) lost but in no reported loss %v", i, recs[i].lsn, losses)
					}
				}
				if l, err = Open("/wal", opts); err != nil {
					t.Fatalf("Open after Repair: %v", err)
				}
			}
			if len(want.drop) > 0 && !want.silent && !strings.Contains(logBuf.String(), "wal:") {
				t.Errorf("dropped records were not reported: log %q", logBuf.String())
			}
			var expect []rec
			for i, r := range recs {
				if !slices.Contains(want.drop, i) {
					expect = append(expect, r)
				}
			}
			checkRecs(t, replayAll(t, l, 0), expect)
			more := appendAll(t, l, expect, payload(5000, 100), payload(5001, 50000), payload(5002, 10))
			// New LSNs must exceed every LSN handed out before, dropped
			// ones included: a checkpoint may name them.
			if more[len(expect)].lsn <= recs[len(recs)-1].lsn {
				t.Fatalf("LSN %v reused after repair (log had reached %v)", more[len(expect)].lsn, recs[len(recs)-1].lsn)
			}
			checkRecs(t, replayAll(t, l, 0), more)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// A clean reopen finds nothing to repair.
			logBuf.Reset()
			l = mustOpen(t, "/wal", opts)
			checkRecs(t, replayAll(t, l, 0), more)
			l.Close()
			if logBuf.Len() != 0 && !want.warns {
				t.Errorf("second open repaired again: %s", logBuf.String())
			}
		})
	}
}

// TestReplayReportsCorruption damages a segment under an open log: Replay
// must return the *CorruptionError, not skip it.
func TestReplayReportsCorruption(t *testing.T) {
	mem := vfs.NewMem()
	recs := buildLog(t, mem)
	l := mustOpen(t, "/wal", Options{FS: mem, SegmentSize: MinSegmentSize})
	defer l.Close()
	r := recs[3]
	edit(t, mem, r.lsn.Segment(), func(b []byte) []byte { b[r.lsn.Offset()+fragHeader+1] ^= 4; return b })
	var seen int
	err := l.Replay(0, func(LSN, []byte) error { seen++; return nil })
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Segment != r.lsn.Segment() || seen != 3 {
		t.Fatalf("Replay: %v after %d records, want corruption after 3", err, seen)
	}
	stop := errors.New("stop")
	if err := l.Replay(0, func(LSN, []byte) error { return stop }); err != stop {
		t.Fatalf("callback error not returned: %v", err)
	}
}

// TestZeroedRecordIsNotPadding: zeros from a record start to the end of a
// page, with intact records after them, must be reported, not read as
// padding (the writer never pads more than 6 bytes).
func TestZeroedRecordIsNotPadding(t *testing.T) {
	b := segmentHeader(1, 0)
	b, _, _ = appendRecord(b, int64(len(b)), false, make([]byte, PageSize-segHeaderSize-fragHeader)) // fills page 0
	b, _, _ = appendRecord(b, int64(len(b)), false, []byte("next page"))
	if len(b) != PageSize+fragHeader+9 {
		t.Fatalf("layout: %d bytes", len(b))
	}
	b = finishSegment(b)
	clear(b[segHeaderSize:PageSize])
	r := NewReader(bytes.NewReader(b), int64(len(b)), 1)
	if r.Next() {
		t.Fatalf("read record %v out of zeroed data", r.LSN())
	}
	var ce *CorruptionError
	if !errors.As(r.Err(), &ce) || ce.Offset != segHeaderSize || !r.dataFollows() {
		t.Fatalf("err %v, want corruption at %d with data after it", r.Err(), segHeaderSize)
	}
	// The same zeros at the end of the file are a clean, zero-filled end.
	one := append(segmentHeader(1, PageSize), b[segHeaderSize:PageSize]...)
	r = NewReader(bytes.NewReader(one), PageSize, 1)
	if r.Next() || r.Err() != nil || r.IntactEnd() != segHeaderSize {
		t.Fatalf("zero-filled segment: err %v, end %d", r.Err(), r.IntactEnd())
	}
}
