package wal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/internal/vfs"
)

// TestRoll: Roll starts a durable new segment only when the current one
// holds records, and the segment survives a power loss before any append.
func TestRoll(t *testing.T) {
	fsys := vfs.NewMem()
	l, err := Open("/w", Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	if seg, err := l.Roll(); err != nil || seg != 1 {
		t.Fatalf("Roll of an empty segment = %d, %v; want 1", seg, err)
	}
	lsn, err := l.Append([]byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	seg, err := l.Roll()
	if err != nil || seg != 2 {
		t.Fatalf("Roll = %d, %v; want 2", seg, err)
	}
	crashed := fsys.Crash()
	if names, _ := crashed.ReadDir("/w"); len(names) != 2 {
		t.Fatalf("after a crash the log holds %q, want segments 1 and 2", names)
	}
	next, err := l.Append([]byte("b"))
	if err != nil || next.Segment() != 2 || next <= lsn {
		t.Fatalf("append after Roll at %v, %v", next, err)
	}
	l.Close()
}

// TestIgnoreBefore: damage in a segment below IgnoreBefore does not stop
// Open, nor does a gap there; OwnDir opens a directory of foreign files.
func TestIgnoreBefore(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{SegmentSize: MinSegmentSize})
	if err != nil {
		t.Fatal(err)
	}
	big := payload(1, PageSize) // random: does not compress
	for range 6 {
		if _, err := l.Append(big); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "0*"))
	if len(segs) < 4 {
		t.Fatalf("segments %q", segs)
	}
	b, _ := os.ReadFile(segs[0])
	b[len(b)/2] ^= 1
	os.WriteFile(segs[0], b, 0o600)
	os.Remove(segs[1])
	var ce *CorruptionError
	if _, err := Open(dir, Options{SegmentSize: MinSegmentSize}); !errors.As(err, &ce) {
		t.Fatalf("Open = %v, want the damage reported", err)
	}
	l, err = Open(dir, Options{SegmentSize: MinSegmentSize, IgnoreBefore: 3})
	if err != nil {
		t.Fatalf("Open ignoring segments 1-2: %v", err)
	}
	if err := l.TruncateBefore(makeLSN(3, 0)); err != nil {
		t.Fatalf("TruncateBefore over the gap: %v", err)
	}
	l.Close()

	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes"), []byte("x"), 0o600)
	if _, err := Open(foreign, Options{}); !errors.Is(err, ErrNotWAL) {
		t.Fatalf("foreign directory: %v", err)
	}
	l, err = Open(foreign, Options{OwnDir: true})
	if err != nil {
		t.Fatalf("OwnDir: %v", err)
	}
	l.Close()
}
