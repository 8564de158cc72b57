//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"none", "touch", "populate", "pread", "copy"} {
		if err := run(path, 0, mode, 1000, 1024); err != nil {
			t.Errorf("mode %s: %v", mode, err)
		}
	}
	for _, bad := range []struct {
		path, mode, want string
		reads            int
	}{
		{path, "later", "want none, touch, populate, pread or copy", 10},
		{path, "none", "nothing to read", 0},
		{filepath.Join(t.TempDir(), "missing"), "none", "no such file", 10},
	} {
		if err := run(bad.path, 0, bad.mode, bad.reads, 1024); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("run(%s, %s, %d) = %v, want an error with %q", bad.path, bad.mode, bad.reads, err, bad.want)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(empty, 0, "none", 10, 1024); err == nil {
		t.Error("an empty file was mapped")
	}
	if err := run(path, 0, "pread", 10, 2<<20); err == nil || !strings.Contains(err.Error(), "-size") {
		t.Errorf("a read larger than the file: %v", err)
	}
}
