package wal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/engramdb/engram/internal/vfs"
)

// rec is a record as the tests expect to replay it.
type rec struct {
	lsn  LSN
	data []byte
}

// payload returns a deterministic payload of n bytes: compressible text
// when i is even, random bytes when odd, so both storage paths are used.
func payload(i, n int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), uint64(n)))
	b := make([]byte, n)
	if i%2 == 0 {
		words := []string{"memory ", "recall ", "记忆 ", "engram ", "vector "}
		var buf bytes.Buffer
		for buf.Len() < n {
			buf.WriteString(words[r.IntN(len(words))])
		}
		copy(b, buf.Bytes())
		return b
	}
	for j := range b {
		b[j] = byte(r.Uint32())
	}
	return b
}

func mustOpen(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func appendAll(t testing.TB, l *Log, recs []rec, payloads ...[]byte) []rec {
	t.Helper()
	for _, p := range payloads {
		lsn, err := l.Append(p)
		if err != nil {
			t.Fatalf("Append(%d bytes): %v", len(p), err)
		}
		if len(recs) > 0 && lsn <= recs[len(recs)-1].lsn {
			t.Fatalf("LSN %v not after %v", lsn, recs[len(recs)-1].lsn)
		}
		recs = append(recs, rec{lsn, p})
	}
	return recs
}

func replayAll(t testing.TB, l *Log, from LSN) []rec {
	t.Helper()
	var got []rec
	err := l.Replay(from, func(lsn LSN, b []byte) error {
		got = append(got, rec{lsn, bytes.Clone(b)})
		return nil
	})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	return got
}

func checkRecs(t testing.TB, got, want []rec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].lsn != want[i].lsn || !bytes.Equal(got[i].data, want[i].data) {
			t.Fatalf("record %d: got %v (%d bytes), want %v (%d bytes)", i, got[i].lsn, len(got[i].data), want[i].lsn, len(want[i].data))
		}
	}
}

// sizes exercises empty records, page-sized ones and multi-page ones.
var sizes = []int{0, 1, 31, 32, 100, 1000, PageSize - fragHeader, PageSize, PageSize + 1, 3*PageSize + 17, 5000}

func TestRoundTrip(t *testing.T) {
	for _, fsName := range []string{"mem", "os"} {
		for _, noComp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nocompression=%v", fsName, noComp), func(t *testing.T) {
				dir := "/wal"
				opts := Options{SegmentSize: 4 * PageSize, NoCompression: noComp}
				if fsName == "mem" {
					opts.FS = vfs.NewMem()
				} else {
					dir = filepath.Join(t.TempDir(), "wal")
				}
				l := mustOpen(t, dir, opts)
				var want []rec
				for i := 0; i < 60; i++ {
					want = appendAll(t, l, want, payload(i, sizes[i%len(sizes)]))
				}
				checkRecs(t, replayAll(t, l, 0), want)
				if want[len(want)-1].lsn.Segment() < 3 {
					t.Fatalf("expected several segments, last LSN %v", want[len(want)-1].lsn)
				}
				if got := l.LastLSN(); got != want[len(want)-1].lsn {
					t.Fatalf("LastLSN %v, want %v", got, want[len(want)-1].lsn)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = mustOpen(t, dir, opts)
				checkRecs(t, replayAll(t, l, 0), want)
				want = appendAll(t, l, want, payload(100, 10), payload(101, 70000))
				checkRecs(t, replayAll(t, l, 0), want)
				// Replay from the middle, and from just after a record.
				mid := len(want) / 2
				checkRecs(t, replayAll(t, l, want[mid].lsn), want[mid:])
				checkRecs(t, replayAll(t, l, want[mid].lsn+1), want[mid+1:])
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if fsName == "os" {
					checkPerms(t, dir)
				}
			})
		}
	}
}

func checkPerms(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fi, _ := e.Info()
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
}

func TestConcurrentAppend(t *testing.T) {
	for _, mode := range []SyncMode{Always, Interval(1e6), UnsafeNoSync} {
		t.Run(mode.String(), func(t *testing.T) {
			opts := Options{FS: vfs.NewMem(), SegmentSize: MinSegmentSize, Sync: mode}
			l := mustOpen(t, "/wal", opts)
			const writers, each = 8, 40
			var mu sync.Mutex
			got := map[LSN][]byte{}
			var wg sync.WaitGroup
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						p := payload(w*1000+i, 10+(w*i)%3000)
						lsn, err := l.Append(p)
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						got[lsn] = p
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, "/wal", opts)
			defer l.Close()
			recs := replayAll(t, l, 0)
			if len(recs) != writers*each || len(got) != writers*each {
				t.Fatalf("replayed %d, acked %d, want %d", len(recs), len(got), writers*each)
			}
			for _, r := range recs {
				if !bytes.Equal(got[r.lsn], r.data) {
					t.Fatalf("record %v differs", r.lsn)
				}
			}
		})
	}
}

func TestGroupCommitSharesSyncs(t *testing.T) {
	l := mustOpen(t, filepath.Join(t.TempDir(), "wal"), Options{})
	defer l.Close()
	const writers, each = 16, 20
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := l.Append(payload(i, 1024)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	s := l.Stats()
	if s.Appends != writers*each {
		t.Fatalf("appends %d", s.Appends)
	}
	// With 16 concurrent writers, groups form; one sync per append would
	// mean group commit is not working.
	if s.Syncs >= s.Appends {
		t.Fatalf("%d syncs for %d appends: no group commit", s.Syncs, s.Appends)
	}
	t.Logf("%d appends, %d syncs, %d writes", s.Appends, s.Syncs, s.Writes)
}

func TestSingleWriterOneSyncPerAppend(t *testing.T) {
	l := mustOpen(t, "/wal", Options{FS: vfs.NewMem()})
	defer l.Close()
	for i := 0; i < 10; i++ {
		if _, err := l.Append(payload(i, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if s := l.Stats(); s.Syncs != 10 || s.Writes != 10 {
		t.Fatalf("stats %+v, want 10 writes and 10 syncs", s)
	}
}

func TestTruncateBefore(t *testing.T) {
	opts := Options{FS: vfs.NewMem(), SegmentSize: MinSegmentSize}
	l := mustOpen(t, "/wal", opts)
	var want []rec
	for i := 0; i < 40; i++ {
		want = appendAll(t, l, want, payload(i, 9000))
	}
	cut := want[25].lsn
	if err := l.TruncateBefore(cut); err != nil {
		t.Fatal(err)
	}
	names, _ := opts.FS.ReadDir("/wal")
	if first, _ := parseSegmentName(names[0]); first != cut.Segment() {
		t.Fatalf("oldest segment %s after TruncateBefore(%v)", names[0], cut)
	}
	got := replayAll(t, l, 0)
	if got[0].lsn.Segment() != cut.Segment() || got[len(got)-1].lsn != want[len(want)-1].lsn {
		t.Fatalf("replay after truncation: %v..%v", got[0].lsn, got[len(got)-1].lsn)
	}
	checkRecs(t, replayAll(t, l, cut), want[25:])
	// Truncating past the end keeps the active segment.
	if err := l.TruncateBefore(^LSN(0)); err != nil {
		t.Fatal(err)
	}
	want = appendAll(t, l, want, []byte("after"))
	l.Close()
	l = mustOpen(t, "/wal", opts)
	defer l.Close()
	got = replayAll(t, l, 0)
	if last := got[len(got)-1]; last.lsn != want[len(want)-1].lsn || string(last.data) != "after" {
		t.Fatalf("last record after reopen: %v %q", last.lsn, last.data)
	}
}

func TestBadInput(t *testing.T) {
	mem := vfs.NewMem()
	l := mustOpen(t, "/wal", Options{FS: mem, SegmentSize: MinSegmentSize})
	before, _ := mem.Bytes("/wal/00000001")
	// (The rejected appends below must leave this segment as it is.)
	if _, err := l.Append(make([]byte, MaxRecordSize+1)); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
	// Fits MaxRecordSize but not the 64 KiB segment (random, so incompressible).
	if _, err := l.Append(payload(1, 2*PageSize)); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("larger than a segment: %v", err)
	}
	if after, _ := mem.Bytes("/wal/00000001"); !bytes.Equal(before, after) {
		t.Fatal("rejected appends changed the segment")
	}
	last, err := l.Append([]byte("last"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Replay(last+1, func(LSN, []byte) error { return errors.New("called") }); err != nil {
		t.Fatalf("replay from just after the last record: %v", err)
	}
	for _, from := range []LSN{makeLSN(last.Segment(), last.Offset()+100), makeLSN(last.Segment()+1, 0)} {
		if err := l.Replay(from, func(LSN, []byte) error { return nil }); !errors.Is(err, ErrPastEnd) {
			t.Fatalf("replay from %v past the end (%v): %v", from, last, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{[]byte("x"), payload(2, 5000)} { // small, and compressible
		if lsn, err := l.Append(p); !errors.Is(err, ErrClosed) || lsn != 0 {
			t.Fatalf("append after close: %v %v", lsn, err)
		}
	}
	if err := l.Replay(0, func(LSN, []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("replay after close: %v", err)
	}
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	if err := l.TruncateBefore(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("truncate after close: %v", err)
	}
	if err := l.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("sync after close: %v", err)
	}

	// A directory that is not a WAL: refused, nothing written.
	mem.MkdirAll("/other", 0o700)
	f, _ := mem.OpenFile("/other/notes.txt", os.O_CREATE|os.O_RDWR, 0o600)
	f.Write([]byte("hello"))
	f.Close()
	if _, err := Open("/other", Options{FS: mem}); !errors.Is(err, ErrNotWAL) {
		t.Fatalf("foreign dir: %v", err)
	}
	if names, _ := mem.ReadDir("/other"); len(names) != 1 {
		t.Fatalf("Open wrote into a foreign dir: %v", names)
	}
	// A segment-named file with other content.
	mem.MkdirAll("/other2", 0o700)
	f, _ = mem.OpenFile("/other2/00000001", os.O_CREATE|os.O_RDWR, 0o600)
	f.Write([]byte("#!/bin/sh\necho this is not a log\n"))
	f.Close()
	if _, err := Open("/other2", Options{FS: mem}); !errors.Is(err, ErrNotWAL) {
		t.Fatalf("foreign segment: %v", err)
	}
	if b, _ := mem.Bytes("/other2/00000001"); string(b) != "#!/bin/sh\necho this is not a log\n" {
		t.Fatal("Open changed a foreign file")
	}
	// A path that is a file.
	if _, err := Open("/other/notes.txt", Options{FS: mem}); err == nil {
		t.Fatal("Open on a file succeeded")
	}
	for _, o := range []Options{{SegmentSize: 100}, {SegmentSize: MaxSegmentSize + 1}, {Sync: Interval(0)}, {Sync: Interval(-1)}} {
		if _, err := Open("/x", Options{FS: mem, SegmentSize: o.SegmentSize, Sync: o.Sync}); err == nil {
			t.Fatalf("Open with %+v succeeded", o)
		}
	}
	if _, err := Repair("/wal", Options{FS: mem}, errors.New("not corruption")); err == nil {
		t.Fatal("Repair accepted a non-corruption error")
	}
	if _, err := Repair("/wal", Options{FS: mem}, &CorruptionError{Segment: 9, Offset: 20}); err == nil {
		t.Fatal("Repair accepted a segment not in the log")
	}
	names, _ := mem.ReadDir("/wal")
	seg1, _ := mem.Bytes("/wal/00000001")
	for _, off := range []int64{-1, int64(len(seg1)) + 1} {
		if _, err := Repair("/wal", Options{FS: mem}, &CorruptionError{Segment: 1, Offset: off}); err == nil {
			t.Fatalf("Repair accepted offset %d", off)
		}
	}
	if after, _ := mem.ReadDir("/wal"); len(after) != len(names) {
		t.Fatalf("a refused Repair changed the directory: %v -> %v", names, after)
	}
	if after, _ := mem.Bytes("/wal/00000001"); !bytes.Equal(after, seg1) {
		t.Fatal("a refused Repair changed a segment")
	}
}

func TestLSN(t *testing.T) {
	l := makeLSN(7, 12345)
	if l.Segment() != 7 || l.Offset() != 12345 || l.String() != "00000007:12345" {
		t.Fatalf("LSN %v: %d %d", l, l.Segment(), l.Offset())
	}
	if makeLSN(8, 16) <= makeLSN(7, MaxSegmentSize-1) {
		t.Fatal("LSNs of a later segment must be larger")
	}
	for _, name := range []string{"00000000", "0000001", "000000001", "0000000a", "-0000001", "+0000001"} {
		if _, ok := parseSegmentName(name); ok {
			t.Errorf("parseSegmentName(%q) accepted", name)
		}
	}
	if n, ok := parseSegmentName("00000042"); !ok || n != 42 {
		t.Fatal("parseSegmentName(00000042)")
	}
}

func TestRecordEndMatchesEncoding(t *testing.T) {
	for _, off := range []int64{segHeaderSize, PageSize - fragHeader, PageSize - fragHeader + 1, PageSize - 1, PageSize, 3*PageSize - 20} {
		for _, n := range []int{0, 1, 6, 7, PageSize - 2*fragHeader, PageSize, 2*PageSize + 5} {
			b, start, end := appendRecord(nil, off, false, make([]byte, n))
			if end != off+int64(len(b)) || recordEnd(off, int64(n)) != end || start < off {
				t.Fatalf("off %d n %d: encoded %d bytes, end %d, recordEnd %d", off, n, len(b), end, recordEnd(off, int64(n)))
			}
		}
	}
}

// TestCloseRacesAppend: Close while appenders are running must not race
// (run under -race) or lose an acknowledged record.
func TestCloseRacesAppend(t *testing.T) {
	mem := vfs.NewMem()
	l := mustOpen(t, "/wal", Options{FS: mem})
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[LSN][]byte{}
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				p := payload(w*1000+i, 2000) // compressible for even i
				lsn, err := l.Append(p)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[lsn] = p
				mu.Unlock()
			}
		}()
	}
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 50 {
			break
		}
		runtime.Gosched()
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	l = mustOpen(t, "/wal", Options{FS: mem.Crash()})
	defer l.Close()
	found := 0
	for _, r := range replayAll(t, l, 0) {
		if p, ok := acked[r.lsn]; ok && bytes.Equal(p, r.data) {
			found++
		}
	}
	if found != len(acked) {
		t.Fatalf("%d of %d acknowledged records after Close and a crash", found, len(acked))
	}
}

// A foreign file beside the segments once made the log unopenable.
func TestOpenIgnoresForeignFiles(t *testing.T) {
	mem := vfs.NewMem()
	opts := Options{FS: mem, SegmentSize: 4 * PageSize}
	l := mustOpen(t, "/wal", opts)
	want := appendAll(t, l, nil, payload(1, 100), payload(2, 5000))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	mem.MkdirAll("/wal/backup", 0o700)
	f, _ := mem.OpenFile("/wal/notes.txt", os.O_CREATE|os.O_RDWR, 0o600)
	f.Write([]byte("mine"))
	f.Close()
	l = mustOpen(t, "/wal", opts)
	want = appendAll(t, l, want, payload(3, 10))
	checkRecs(t, replayAll(t, l, 0), want)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := mem.Bytes("/wal/notes.txt"); string(b) != "mine" {
		t.Fatalf("foreign file after open: %q", b)
	}
}
