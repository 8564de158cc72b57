package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLockNote(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := ReadLock(dir)
	if err != nil || info.PID != strconv.Itoa(os.Getpid()) || info.Note != "" {
		t.Fatalf("ReadLock after Open = %+v, %v; want our pid and no note", info, err)
	}
	if err := db.SetLockNote("serve http://127.0.0.1:7077"); err != nil {
		t.Fatal(err)
	}
	if info, _ = ReadLock(dir); info.Note != "serve http://127.0.0.1:7077" || info.PID != strconv.Itoa(os.Getpid()) {
		t.Fatalf("ReadLock = %+v", info)
	}
	// A second handle is refused, and the error names pid and note.
	_, err = Open(dir, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "serve http://127.0.0.1:7077") {
		t.Fatalf("second Open: %v; want ErrLocked naming the note", err)
	}
	for _, bad := range []string{"two\nlines", "cr\r", strings.Repeat("x", maxLockNote+1)} {
		if err := db.SetLockNote(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetLockNote(%.20q) = %v, want ErrInvalid", bad, err)
		}
	}
	if info, _ = ReadLock(dir); info.Note != "serve http://127.0.0.1:7077" {
		t.Fatalf("a refused note changed the LOCK: %+v", info)
	}
	if err := db.SetLockNote(""); err != nil {
		t.Fatal(err)
	}
	if info, _ = ReadLock(dir); info.Note != "" {
		t.Fatalf("empty note left %q", info.Note)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.SetLockNote("x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetLockNote after Close = %v, want ErrClosed", err)
	}
	if info, err := ReadLock(filepath.Join(t.TempDir(), "none")); err != nil || info != (LockInfo{}) {
		t.Fatalf("ReadLock of a missing store = %+v, %v", info, err)
	}
}

func TestParseLock(t *testing.T) {
	for in, want := range map[string]LockInfo{
		"":                     {},
		"123\n":                {PID: "123"},
		"123":                  {PID: "123"},
		"123\nnote here\n":     {PID: "123", Note: "note here"},
		"123\nnote\nmore\n":    {PID: "123", Note: "note"},
		" 7 \n  spaced  \n":    {PID: "7", Note: "spaced"},
		"\x00\xff\n\x01junk\n": {PID: "\x00\xff", Note: "\x01junk"},
	} {
		if got := parseLock([]byte(in)); got != want {
			t.Errorf("parseLock(%q) = %+v, want %+v", in, got, want)
		}
	}
}
