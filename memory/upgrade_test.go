package memory

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory/lexical"
)

// TestUpgradeStoreV1 opens a store written by the first release (archive parts, conversations
// and tasks in the KV namespace) and checks that its archive moved into an archive collection and
// its conversation and task into the records collection, intact, and that the manifest no
// longer carries them.
func TestUpgradeStoreV1(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/store-v1")); err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, _ error) error {
		if d.IsDir() {
			return os.Chmod(p, 0o700)
		}
		return os.Chmod(p, 0o600)
	})
	e, err := lexical.New(lexical.Options{Dim: 16})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for round := range 2 {
		s, err := Open(dir, OpenOptions{Options: Options{Embedder: e}})
		if err != nil {
			t.Fatal(err)
		}
		arch, err := s.Archived(ctx)
		if err != nil || len(arch) != 3 {
			t.Fatalf("round %d: archived %d, %v; want 3", round, len(arch), err)
		}
		if n, _ := s.Count(ctx, nil); n != 2 {
			t.Fatalf("round %d: %d live memories, want 2", round, n)
		}
		legacy := 0
		for _, p := range []string{legacyArchivePrefix, legacyConversationPrefix, legacyTaskPrefix} {
			_ = s.kv.Scan(p, func(string, []byte) error { legacy++; return nil })
		}
		if legacy != 0 {
			t.Fatalf("round %d: %d archive parts, conversations or tasks left in the KV namespace", round, legacy)
		}
		if n, err := s.countRecords(ctx, kindConversation); err != nil || n != 1 {
			t.Fatalf("round %d: %d conversation records, %v", round, n, err)
		}
		if n, err := s.countRecords(ctx, kindTask); err != nil || n != 1 {
			t.Fatalf("round %d: %d task records, %v", round, n, err)
		}
		c, err := s.Context(ctx, "s1")
		if err != nil || len(c.Turns) != 2 {
			t.Fatalf("round %d: conversation %+v, %v", round, c, err)
		}
		if tk, err := s.Task(ctx, "t1"); err != nil || tk.Next != "pack" {
			t.Fatalf("round %d: task %+v, %v", round, tk, err)
		}
		if round == 1 {
			if n, err := s.Restore(ctx, arch[0].ID); err != nil || n != 1 {
				t.Fatalf("restore: %d, %v", n, err)
			}
			got, err := s.Get(ctx, arch[0].ID)
			if err != nil || len(got) != 1 || !strings.Contains(got[0].Text, " ") || len(got[0].Vector) != 16 {
				t.Fatalf("restored %+v, %v", got, err)
			}
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		man, err := os.ReadFile(currentManifest(t, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{legacyArchivePrefix, legacyConversationPrefix, legacyTaskPrefix, "hello there", "plan the trip"} {
			if strings.Contains(string(man), p) {
				t.Fatalf("round %d: the MANIFEST still holds %q", round, p)
			}
		}
	}
}
