package engine

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEncryptedCorruptionMatrix flips bytes across every file of an
// encrypted store (KEYS, manifests, sealed segment files, the sealed WAL)
// at the start, the middle and the end, one flip per copy: Open, Check and
// reads either fail with an error naming damage (ErrCorrupt, or ErrWrongKey
// for a KEYS whose seal no longer opens) or return exactly the records
// written; never other bytes. Repair then leaves a store that opens and
// checks clean, holding only intact records.
func TestEncryptedCorruptionMatrix(t *testing.T) {
	k := testKey("encrypted matrix")
	base := filepath.Join(t.TempDir(), "base")
	db, c, recs := sealedStore(t, base, k)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	more := secretRecords("carol", 10) // in the WAL only
	if err := c.Upsert(ctx, more); err != nil {
		t.Fatal(err)
	}
	if err := db.KV().Put("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	db.noCloseFlush = true
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	all := append(append([]Record(nil), recs...), more...)
	want := map[string]Record{}
	for _, r := range all {
		want[r.ID] = r
	}
	var files []string
	filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && e.Name() != "LOCK" {
			files = append(files, p)
		}
		return err
	})
	scenarios := 0
	for _, path := range files {
		orig, _ := os.ReadFile(path)
		if len(orig) == 0 {
			continue
		}
		rel, _ := filepath.Rel(base, path)
		for _, off := range []int{0, 12, 40, len(orig) / 3, len(orig) / 2, len(orig) - 20, len(orig) - 1} {
			if off < 0 || off >= len(orig) {
				continue
			}
			scenarios++
			dir := filepath.Join(t.TempDir(), "s")
			if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
				t.Fatal(err)
			}
			b := bytes.Clone(orig)
			b[off] ^= 0x10
			if err := os.WriteFile(filepath.Join(dir, rel), b, 0o600); err != nil {
				t.Fatal(err)
			}
			name := rel + "@" + itoa(off)
			damage := func(err error) bool {
				return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrWrongKey) && strings.HasPrefix(rel, keysName)
			}
			db, err := Open(dir, encOpts(k))
			if err != nil {
				if !damage(err) {
					t.Fatalf("%s: open: %v", name, err)
				}
			} else {
				if c, err := db.Collection("notes"); err == nil {
					for id, r := range want {
						got, err := c.Get(id)
						if err == nil && (got.Text != r.Text || !bytes.Equal(vecBytes(got.Vector), vecBytes(r.Vector))) {
							t.Fatalf("%s: %s read back as other bytes", name, id)
						}
						if err != nil && !damage(err) && !errors.Is(err, ErrNotFound) {
							t.Fatalf("%s: Get(%s): %v", name, id, err)
						}
					}
				} else if !damage(err) {
					t.Fatalf("%s: collection: %v", name, err)
				}
				if err := db.Check(); err != nil && !damage(err) {
					t.Fatalf("%s: check: %v", name, err)
				}
				db.Close()
			}
			if strings.HasPrefix(rel, keysName) {
				continue // no repair without the keys: restore KEYS from a copy
			}
			if _, err := Repair(dir, encOpts(k)); err != nil {
				t.Fatalf("%s: repair: %v", name, err)
			}
			db, err = Open(dir, encOpts(k))
			if err != nil {
				t.Fatalf("%s: open after repair: %v", name, err)
			}
			if err := db.Check(); err != nil {
				t.Fatalf("%s: check after repair: %v", name, err)
			}
			c, err := db.Collection("notes")
			if err != nil {
				t.Fatalf("%s: after repair: %v", name, err)
			}
			for id, r := range want {
				if got, err := c.Get(id); err == nil && got.Text != r.Text {
					t.Fatalf("%s: after repair %s reads %q", name, id, got.Text)
				}
			}
			db.Close()
		}
	}
	if scenarios < 20 {
		t.Fatalf("only %d scenarios", scenarios)
	}
	t.Logf("%d scenarios over %d files", scenarios, len(files))
}

func itoa(i int) string { return strconv.Itoa(i) }
