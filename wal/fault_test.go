package wal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/engramdb/engram/internal/vfs"
)

// TestInjectedFaults fails one operation while appending and checks that the
// error reaches the caller, the failed record is undone at once (it is in
// neither the running log nor what a power loss leaves), and the next
// append succeeds without reopening the log: the cause cleared, the log
// carries on. Every acknowledged record is there, before and after a
// reopen.
func TestInjectedFaults(t *testing.T) {
	cases := []struct {
		op    vfs.Op
		after int
		err   error
	}{
		{vfs.OpWrite, 3, syscall.ENOSPC}, // short write, then ENOSPC
		{vfs.OpWrite, 0, syscall.EIO},
		{vfs.OpSync, 4, syscall.EIO},
		{vfs.OpSync, 0, syscall.ENOSPC},
		{vfs.OpSyncDir, 0, syscall.EIO}, // at the first segment rollover
		{vfs.OpOpen, 0, syscall.ENOSPC}, // creating the next segment
	}
	for _, tc := range cases {
		for _, crash := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-after-%d-%v/crash=%v", tc.op, tc.after, tc.err, crash), func(t *testing.T) {
				mem := vfs.NewMem()
				opts := Options{FS: mem, SegmentSize: MinSegmentSize}
				l := mustOpen(t, "/wal", opts)
				mem.InjectError(tc.op, "/wal", tc.after, tc.err)
				var acked []rec
				var failed error
				var failedP []byte
				for i := 0; i < 40 && failed == nil; i++ {
					p := payload(i, 7000)
					lsn, err := l.Append(p)
					if err != nil {
						failed, failedP = err, p
						break
					}
					acked = append(acked, rec{lsn, p})
				}
				if !errors.Is(failed, tc.err) || errors.Is(failed, ErrPoisoned) {
					t.Fatalf("append error %v, want %v, undone (not ErrPoisoned)", failed, tc.err)
				}
				checkRecs(t, replayAll(t, l, 0), acked)
				if s := l.Stats(); s.Failures != 1 || s.Rollbacks != 1 {
					t.Fatalf("stats after one failure: %+v", s)
				}
				// The fault was one-shot: the cause is gone, the next
				// append works on the same Log.
				acked = appendAll(t, l, acked, []byte("after the fault"), payload(41, 9000))
				if err := l.Sync(); err != nil {
					t.Fatalf("sync after recovery: %v", err)
				}
				checkRecs(t, replayAll(t, l, 0), acked)
				fs := mem
				if crash {
					fs = mem.Crash()
				} else if err := l.Close(); err != nil {
					t.Fatalf("close after recovery: %v", err)
				}
				opts.FS = fs
				l2 := mustOpen(t, "/wal", opts)
				got := replayAll(t, l2, 0)
				for _, r := range got {
					if bytes.Equal(r.data, failedP) {
						t.Fatalf("the failed record replays at %v after reopen", r.lsn)
					}
				}
				checkRecs(t, got, acked)
				want := appendAll(t, l2, got, payload(99, 10), payload(98, 20000))
				checkRecs(t, replayAll(t, l2, 0), want)
				if err := l2.Close(); err != nil {
					t.Fatal(err)
				}
				if crash {
					l.Close()
				}
			})
		}
	}
}

// TestUndoFails: when the undo of a failed write fails too (the truncate
// or the removal of a half-created segment), the log is poisoned: appends
// fail with ErrPoisoned, each retrying the undo, until it succeeds; then
// appends work again without a reopen, and the failed record is gone.
func TestUndoFails(t *testing.T) {
	for _, undo := range []vfs.Op{vfs.OpTruncate, vfs.OpRemove, vfs.OpOpen} {
		t.Run(string(undo), func(t *testing.T) {
			mem := vfs.NewMem()
			opts := Options{FS: mem, SegmentSize: MinSegmentSize}
			l := mustOpen(t, "/wal", opts)
			acked := appendAll(t, l, nil, payload(1, 100))
			cause := vfs.OpWrite
			if undo == vfs.OpRemove {
				// The failed record starts segment 2: the undo removes it.
				cause = vfs.OpSyncDir
				acked = appendAll(t, l, acked, payload(5, 30000))
			}
			mem.InjectError(cause, "/wal", 0, syscall.ENOSPC)
			mem.InjectError(undo, "/wal", 0, syscall.EIO)
			mem.InjectError(undo, "/wal", 0, syscall.EIO)
			failedP := payload(3, 40000)
			if _, err := l.Append(failedP); !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, ErrPoisoned) {
				t.Fatalf("append whose undo failed: %v, want ENOSPC and ErrPoisoned", err)
			}
			if _, err := l.Append([]byte("x")); !errors.Is(err, ErrPoisoned) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("append while the undo still fails: %v, want ErrPoisoned with the undo's error", err)
			}
			acked = appendAll(t, l, acked, []byte("undone"))
			for _, r := range replayAll(t, l, 0) {
				if bytes.Equal(r.data, failedP) || bytes.Equal(r.data, []byte("x")) {
					t.Fatalf("a failed record is in the log at %v", r.lsn)
				}
			}
			checkRecs(t, replayAll(t, l, 0), acked)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, "/wal", Options{FS: mem.Crash(), SegmentSize: MinSegmentSize})
			defer l.Close()
			checkRecs(t, replayAll(t, l, 0), acked)
		})
	}
}

// TestSyncFailureFailsWholeGroup: every writer waiting on a failed group
// sync gets the error, nothing any writer saw acknowledged is lost, no
// failed record replays, and the writers carry on after the failure.
func TestSyncFailureFailsWholeGroup(t *testing.T) {
	mem := vfs.NewMem()
	l := mustOpen(t, "/wal", Options{FS: mem})
	mem.InjectError(vfs.OpSync, "", 30, syscall.EIO)
	var mu sync.Mutex
	acked := map[LSN][]byte{}
	failed := map[string]bool{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				p := payload(w*1000+i, 500)
				lsn, err := l.Append(p)
				mu.Lock()
				if err != nil {
					failed[string(p)] = true
					if !errors.Is(err, syscall.EIO) {
						t.Errorf("append: %v", err)
					}
				} else {
					acked[lsn] = p
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(failed) == 0 || len(acked)+len(failed) != 8*200 {
		t.Fatalf("%d failed, %d acknowledged of %d", len(failed), len(acked), 8*200)
	}
	l = mustOpen(t, "/wal", Options{FS: mem.Crash()})
	defer l.Close()
	found := 0
	for _, r := range replayAll(t, l, 0) {
		if failed[string(r.data)] {
			t.Fatalf("a record whose append failed replays at %v", r.lsn)
		}
		if p, ok := acked[r.lsn]; ok {
			if !bytes.Equal(p, r.data) {
				t.Fatalf("record %v differs", r.lsn)
			}
			found++
		}
	}
	if found != len(acked) {
		t.Fatalf("%d of %d acknowledged records survived the crash", found, len(acked))
	}
}

// TestPowerLoss crashes a MemFS while writers append in Always mode: every
// record acknowledged before the crash must be replayed intact and in
// order, and every replayed record must be one that was appended whole.
func TestPowerLoss(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 8
	}
	for round := 0; round < rounds; round++ {
		mem := vfs.NewMem()
		opts := Options{FS: mem, SegmentSize: MinSegmentSize}
		l := mustOpen(t, "/wal", opts)
		var mu sync.Mutex
		acked := map[LSN][]byte{}
		attempted := map[string]bool{}
		var crashed *vfs.MemFS
		var snapshot map[LSN][]byte
		var wg sync.WaitGroup
		rng := rand.New(rand.NewPCG(uint64(round), 1))
		crashAt := 20 + rng.IntN(200)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 100; i++ {
					p := payload(round*10000+w*1000+i, 1+(i*7919+w*104729)%9000)
					mu.Lock()
					attempted[string(p)] = true
					mu.Unlock()
					lsn, err := l.Append(p)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acked[lsn] = p
					if len(acked) == crashAt {
						// Everything acknowledged so far must be in this state.
						crashed = mem.Crash()
						snapshot = make(map[LSN][]byte, len(acked))
						for k, v := range acked {
							snapshot[k] = v
						}
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		l.Close()
		if crashed == nil {
			t.Fatal("no crash taken")
		}
		opts.FS = crashed
		l = mustOpen(t, "/wal", opts)
		got := replayAll(t, l, 0)
		l.Close()
		seen := 0
		for i, r := range got {
			if i > 0 && r.lsn <= got[i-1].lsn {
				t.Fatalf("round %d: LSNs out of order", round)
			}
			if !attempted[string(r.data)] {
				t.Fatalf("round %d: replayed a record that was never appended (%d bytes at %v)", round, len(r.data), r.lsn)
			}
			if p, ok := snapshot[r.lsn]; ok {
				if !bytes.Equal(p, r.data) {
					t.Fatalf("round %d: record %v differs", round, r.lsn)
				}
				seen++
			}
		}
		if seen != len(snapshot) {
			t.Fatalf("round %d: %d of %d acknowledged records survived", round, seen, len(snapshot))
		}
	}
}

// TestIntervalAndNoSyncDurability: in the weaker modes Sync and Close make
// records durable.
func TestIntervalAndNoSyncDurability(t *testing.T) {
	for _, mode := range []SyncMode{Interval(time.Hour), UnsafeNoSync} {
		t.Run(mode.String(), func(t *testing.T) {
			mem := vfs.NewMem()
			opts := Options{FS: mem, SegmentSize: MinSegmentSize, Sync: mode}
			l := mustOpen(t, "/wal", opts)
			want := appendAll(t, l, nil, payload(1, 100), payload(3, 40000), payload(5, 30000)) // odd: random, so the third starts segment 2
			if want[2].lsn.Segment() != 2 {
				t.Fatalf("layout: third record at %v, want segment 2", want[2].lsn)
			}
			if s := l.Stats(); s.Syncs != 0 {
				t.Fatalf("%v synced in Append: %+v", mode, s)
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			l2 := mustOpen(t, "/wal", Options{FS: mem.Crash(), SegmentSize: MinSegmentSize})
			checkRecs(t, replayAll(t, l2, 0), want)
			l2.Close()
			want = appendAll(t, l, want, payload(4, 100))
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2 = mustOpen(t, "/wal", Options{FS: mem.Crash(), SegmentSize: MinSegmentSize})
			checkRecs(t, replayAll(t, l2, 0), want)
			l2.Close()
		})
	}
}

// TestIntervalSyncsInBackground: in Interval mode a record becomes durable
// without any further call.
func TestIntervalSyncsInBackground(t *testing.T) {
	mem := vfs.NewMem()
	l := mustOpen(t, "/wal", Options{FS: mem, Sync: Interval(2 * time.Millisecond)})
	defer l.Close()
	want := appendAll(t, l, nil, payload(1, 500))
	deadline := time.Now().Add(5 * time.Second)
	for l.Stats().Syncs == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no background sync within 5s")
		}
		time.Sleep(time.Millisecond)
	}
	l2 := mustOpen(t, "/wal", Options{FS: mem.Crash()})
	defer l2.Close()
	checkRecs(t, replayAll(t, l2, 0), want)
}

// TestOpenDoesNotWrite: opening an intact log writes nothing, so a full
// disk still lets a session open and replay; the first append then fails.
func TestOpenDoesNotWrite(t *testing.T) {
	mem := vfs.NewMem()
	opts := Options{FS: mem, SegmentSize: MinSegmentSize}
	l := mustOpen(t, "/wal", opts)
	want := appendAll(t, l, nil, payload(1, 100), payload(2, 300))
	l.Close()
	names, _ := mem.ReadDir("/wal")
	seg, _ := mem.Bytes("/wal/00000001")
	mem.InjectError(vfs.OpOpen, "/wal/00000002", 0, syscall.ENOSPC)
	l = mustOpen(t, "/wal", opts)
	checkRecs(t, replayAll(t, l, 0), want)
	if after, _ := mem.ReadDir("/wal"); len(after) != len(names) {
		t.Fatalf("Open created files: %v -> %v", names, after)
	}
	if after, _ := mem.Bytes("/wal/00000001"); !bytes.Equal(after, seg) {
		t.Fatal("Open changed an intact segment")
	}
	if _, err := l.Append([]byte("no room")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v", err)
	}
	l.Close()
	l = mustOpen(t, "/wal", opts)
	defer l.Close()
	checkRecs(t, replayAll(t, l, 0), want)
	more := appendAll(t, l, want, []byte("room again"))
	if more[2].lsn.Segment() != 2 {
		t.Fatalf("the first append after reopen went to %v, want a new segment", more[2].lsn)
	}
}
