package memory_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/memorytest"
)

// keyBackend records the sessions offered to ReleaseSessionKeys.
type keyBackend struct {
	memory.Backend
	released []string
}

func (b *keyBackend) ReleaseSessionKeys(sessions ...string) (int, error) {
	b.released = append(b.released, sessions...)
	return len(sessions), nil
}

// TestPurgeReleasesSessionKeys: Purge, PurgeWhere and emptying the trash offer each session
// they touched to a backend that keeps per-session keys (an encrypted engine store destroys
// the key when nothing holds the session any more: engine.TestReleaseSessionKey); forgetting
// alone, restorable (ForgetRetention), offers none.
func TestPurgeReleasesSessionKeys(t *testing.T) {
	ctx := context.Background()
	b := &keyBackend{Backend: memory.NewMemBackend()}
	s, _ := memorytest.NewStore(t, b, memory.Options{ForgetRetention: time.Hour})
	a := memorytest.Remember(t, s, "alice", "Alice keeps bees on the roof.", memory.RememberOptions{})
	memorytest.Remember(t, s, "bob", "Bob rides a red bicycle.", memory.RememberOptions{})
	c := memorytest.Remember(t, s, "carol", "Carol plays the oboe.", memory.RememberOptions{})

	if _, err := s.Forget(ctx, c.IDs[0]); err != nil {
		t.Fatal(err)
	}
	if len(b.released) != 0 {
		t.Fatalf("a restorable forget released %v", b.released)
	}
	if n, err := s.Purge(ctx, a.IDs[0]); err != nil || n != 1 {
		t.Fatalf("purge: %d %v", n, err)
	}
	if !slices.Equal(b.released, []string{"alice"}) {
		t.Fatalf("after Purge: %v", b.released)
	}
	if n, err := s.PurgeWhere(ctx, memory.Eq(memory.FieldSession, "bob")); err != nil || n != 1 {
		t.Fatalf("purge where: %d %v", n, err)
	}
	if !slices.Equal(b.released, []string{"alice", "bob"}) {
		t.Fatalf("after PurgeWhere: %v", b.released)
	}
	if n, err := s.PurgeForgotten(ctx); err != nil || n != 1 {
		t.Fatalf("purge forgotten: %d %v", n, err)
	}
	if !slices.Equal(b.released, []string{"alice", "bob", "carol"}) {
		t.Fatalf("after PurgeForgotten: %v", b.released)
	}
}

// TestForgetForGoodReleasesSessionKeys: without a trash, Forget and ForgetWhere delete for good
// and offer the sessions too.
func TestForgetForGoodReleasesSessionKeys(t *testing.T) {
	ctx := context.Background()
	b := &keyBackend{Backend: memory.NewMemBackend()}
	s, _ := memorytest.NewStore(t, b, memory.Options{})
	a := memorytest.Remember(t, s, "alice", "Alice keeps bees on the roof.", memory.RememberOptions{})
	memorytest.Remember(t, s, "bob", "Bob rides a red bicycle.", memory.RememberOptions{})
	if n, err := s.Forget(ctx, a.IDs[0]); err != nil || n != 1 || !slices.Equal(b.released, []string{"alice"}) {
		t.Fatalf("forget: %d %v %v", n, err, b.released)
	}
	if n, err := s.ForgetWhere(ctx, memory.Eq(memory.FieldSession, "bob")); err != nil || n != 1 || !slices.Equal(b.released, []string{"alice", "bob"}) {
		t.Fatalf("forget where: %d %v %v", n, err, b.released)
	}
}

// TestPurgeDestroysKeyOfEncryptedStore: on an encrypted engine store, a session purged for good
// loses its key, so a copy of the store taken before the purge, opened with the store's current
// KEYS, no longer holds the session's un-flushed memories (sealed in the WAL); the other
// session's are there. (Segment files are not sealed yet: docs/format/encryption.md.)
func TestPurgeDestroysKeyOfEncryptedStore(t *testing.T) {
	ctx := context.Background()
	key := &engine.Key{Passphrase: []byte("correct horse"), ArgonTime: 1, ArgonMemoryKiB: 8 << 10, ArgonThreads: 1}
	dir := filepath.Join(t.TempDir(), "store")
	open := func(dir string) *memory.Store {
		s, err := memory.Open(dir, memory.OpenOptions{Engine: engine.Options{Key: key}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(dir)
	if _, err := s.Remember(ctx, "alice", "Alice's locker code is QUOKKA-4471.", memory.RememberOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(ctx, "bob", "Bob's bike is a red Gazelle.", memory.RememberOptions{}); err != nil {
		t.Fatal(err)
	}
	// The copy: what a backup of the directory taken now holds (LOCK left behind).
	before := filepath.Join(t.TempDir(), "before")
	if err := os.CopyFS(before, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(before, "LOCK"))
	if n, err := s.PurgeWhere(ctx, memory.Eq(memory.FieldSession, "alice")); err != nil || n != 1 {
		t.Fatalf("purge: %d %v", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	keys, err := os.ReadFile(filepath.Join(dir, "KEYS"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(before, "KEYS"), keys, 0o600); err != nil {
		t.Fatal(err)
	}
	b := open(before)
	defer b.Close()
	for session, want := range map[string]int{"alice": 0, "bob": 1} {
		n, err := b.Count(ctx, memory.Eq(memory.FieldSession, session))
		if err != nil || n != want {
			t.Errorf("the copy holds %d memories of %s (%v), want %d", n, session, err, want)
		}
	}
}
