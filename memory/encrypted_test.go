package memory_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
)

// TestEncryptedStoreHoldsNoPlaintext: distinctive memories (and their
// vectors) written into an encrypted store, then flushed, compacted,
// backed up, forgotten (the trash) and archived (the cold archive), leave
// no byte of their text, session names or the float32 bytes of their
// vectors anywhere in the store directory (WAL included) or the backup.
func TestEncryptedStoreHoldsNoPlaintext(t *testing.T) {
	key := &engine.Key{Passphrase: []byte("correct horse battery"), ArgonTime: 1, ArgonMemoryKiB: 8 << 10, ArgonThreads: 1}
	// The control: the same steps on a plaintext store leave the needles
	// everywhere, so the scan is able to find them.
	found := plaintextAfterLifecycle(t, nil)
	if len(found) < 10 {
		t.Fatalf("a plaintext store shows only %d needles: the scan tests nothing", len(found))
	}
	t.Logf("control: %d needles found in a plaintext store", len(found))
	if found := plaintextAfterLifecycle(t, key); len(found) > 0 {
		t.Fatalf("plaintext in an encrypted store: %q", found)
	}
}

// plaintextAfterLifecycle writes three distinctive memories into a store
// (encrypted with key, unless nil), flushes, compacts, backs up, forgets
// one and archives another, checks everything reads back, and returns the
// needles (text, session names, vector bytes) found in the store
// directory or the backup, as "path: needle index".
func plaintextAfterLifecycle(t *testing.T, key *engine.Key) []string {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	open := func() *memory.Store {
		var eo engine.Options
		if key != nil {
			eo.Key = key
		}
		s, err := memory.Open(dir, memory.OpenOptions{Engine: eo})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	texts := map[string]string{
		"sess-aardvark": "The AARDVARK-7731 vault code is kept under the stairs.",
		"sess-bonobo":   "BONOBO-2208 is the name of the secret project.",
		"sess-caracal":  "CARACAL-5150 flies to Lisbon on the ninth.",
	}
	old := time.Now().Add(-400 * 24 * time.Hour)
	needles := [][]byte{}
	for session, text := range texts {
		if _, err := s.Remember(ctx, session, text, memory.RememberOptions{Time: old}); err != nil {
			t.Fatal(err)
		}
		vs, err := s.Embedder().Embed(ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		// The lexical embedder's vectors are sparse: the needle starts
		// at the first non-zero float.
		i := 0
		for i < len(vs[0])-2 && vs[0][i] == 0 {
			i++
		}
		needles = append(needles, []byte(text), []byte(session), []byte(text[:12]), floatBytes(vs[0][i:i+2]), floatBytes(vs[0]))
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "backup")
	if err := s.Backup(ctx, backup); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ForgetWhere(ctx, memory.Eq(memory.FieldSession, "sess-bonobo")); err != nil || n != 1 {
		t.Fatalf("forget: %d %v", n, err)
	}
	res, err := s.Cleanup(ctx, memory.CleanupPolicy{OlderThan: time.Hour, IncludeRecalled: true, Filter: memory.Eq(memory.FieldSession, "sess-caracal")})
	if err != nil || len(res.Memories) != 1 {
		t.Fatalf("archive: %+v %v", res, err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, d := range []string{dir, backup} {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range needles {
				if bytes.Contains(b, n) {
					found = append(found, fmt.Sprintf("%s: needle %d", p, i))
				}
			}
			return nil
		})
	}
	// And it all reads back.
	s = open()
	defer s.Close()
	if n, err := s.Count(ctx, memory.Eq(memory.FieldSession, "sess-aardvark")); err != nil || n != 1 {
		t.Fatalf("live memory: %d %v", n, err)
	}
	if a, err := s.Archived(ctx); err != nil || len(a) != 1 || a[0].Text != texts["sess-caracal"] {
		t.Fatalf("archived: %+v %v", a, err)
	}
	return found
}

func floatBytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}
