package engine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engramdb/engram/internal/crypt"
	"github.com/engramdb/engram/quant"
)

// rotationStore is an encrypted store with three segment files holding
// the sessions alice, bob and carol.
func rotationStore(t *testing.T, dir string, k *Key) (*DB, *Collection, []Record) {
	t.Helper()
	db := openT(t, dir, encOpts(k))
	c, err := db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.L2, Fingerprint: "fp"})
	if err != nil {
		t.Fatal(err)
	}
	var all []Record
	for _, s := range []string{"alice", "bob", "carol"} {
		recs := secretRecords(s, 20)
		if err := c.Upsert(ctx, recs); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		all = append(all, recs...)
	}
	return db, c, all
}

// TestRotateKeys: a rotation rewrites every file under a new generation
// (progress reported), keeps everything readable (live, reopened, and a
// backup taken before, through the retired keys), and writes after it
// are sealed with the new keys; DropRetiredKeys then makes the backup
// from before unreadable with the store's KEYS, and a purge after a
// rotation reaches files sealed with the session's retired key.
func TestRotateKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	k := testKey("rotate keys")
	db, c, recs := rotationStore(t, dir, k)
	before := filepath.Join(t.TempDir(), "before")
	if err := db.Backup(before); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DropRetiredKeys(); err != nil {
		t.Fatalf("drop with nothing retired: %v", err)
	}
	var seen []int64
	gen, err := db.RotateKeys(func(done, total int64) { seen = append(seen, done, total) })
	if err != nil || gen != 2 {
		t.Fatalf("RotateKeys = %d, %v", gen, err)
	}
	if len(seen) < 4 || seen[len(seen)-2] != seen[len(seen)-1] || seen[1] != 3 {
		t.Fatalf("progress %v", seen)
	}
	for _, s := range c.segs {
		if s.sf.keyGen != 2 {
			t.Fatalf("%s sealed with generation %d", s.sf.path, s.sf.keyGen)
		}
	}
	expectRecords(t, c, recs)
	more := secretRecords("dave", 3)
	if err := c.Upsert(ctx, more); err != nil {
		t.Fatal(err)
	}
	if gen, err := db.RotateKeys(nil); err != nil || gen != 3 {
		t.Fatalf("second rotation: %d %v", gen, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	all := append(append([]Record(nil), recs...), more...)
	db = openT(t, dir, encOpts(k))
	c, _ = db.Collection("notes")
	expectRecords(t, c, all)
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	// The backup from before the rotations opens with today's KEYS.
	copyKeys(t, dir, before)
	// (Open, not openT: the harness would check it after the test, when
	// it is unreadable on purpose.)
	bk, err := Open(before, encOpts(k))
	if err != nil {
		t.Fatal(err)
	}
	bc, err := bk.Collection("notes")
	if err != nil {
		t.Fatal(err)
	}
	expectRecords(t, bc, recs)
	bk.Close()
	// A purge destroys the session's retired keys too.
	var ids []string
	for _, r := range recs[:20] {
		ids = append(ids, r.ID)
	}
	if _, err := c.Delete(ids...); err != nil {
		t.Fatal(err)
	}
	if n, err := db.ReleaseSessionKeys("alice"); err != nil || n != 1 {
		t.Fatalf("release alice: %d %v", n, err)
	}
	if got := db.keys.AllKeyIDs("alice"); len(got) != 0 {
		t.Fatalf("alice keeps %d keys", len(got))
	}
	if ok, err := db.DropRetiredKeys(); err != nil || !ok {
		t.Fatalf("DropRetiredKeys = %v %v", ok, err)
	}
	if db.keys.Retired() {
		t.Fatal("retired keys left")
	}
	expectRecords(t, c, all[20:])
	db.Close()
	copyKeys(t, dir, before)
	if err := openCollectionErr(t, before, encOpts(k)); !errors.Is(err, ErrKeyDestroyed) {
		t.Fatalf("backup from before, retired keys dropped: %v", err)
	}
	db = openT(t, dir, encOpts(k))
	c, _ = db.Collection("notes")
	expectRecords(t, c, all[20:])
	db.Close()
	plain := openT(t, filepath.Join(t.TempDir(), "plain"), testOpts())
	defer plain.Close()
	if _, err := plain.RotateKeys(nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("rotate a plaintext store: %v", err)
	}
}

// TestRotateKeysKilled kill -9's a process in the middle of a rotation
// (after its first file is rewritten): the store opens with every record,
// Check is clean, and RotateKeys resumes the same generation and finishes.
func TestRotateKeysKilled(t *testing.T) {
	k := testKey("rotate killed")
	if dir := os.Getenv("ENGRAM_ROTATE_CHILD"); dir != "" {
		db, err := Open(dir, encOpts(k))
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		_, err = db.RotateKeys(func(done, total int64) {
			fmt.Printf("P %d %d\n", done, total)
			if done == 1 {
				time.Sleep(time.Hour) // killed here
			}
		})
		fmt.Println("ERR finished", err)
		os.Exit(1)
	}
	dir := filepath.Join(t.TempDir(), "store")
	db, _, recs := rotationStore(t, dir, k)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRotateKeysKilled$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ENGRAM_ROTATE_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ERR") {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %s", line)
		}
		if line == "P 1 3" {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	db = openT(t, dir, encOpts(k))
	c, _ := db.Collection("notes")
	expectRecords(t, c, recs)
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	gens := map[uint32]int{}
	for _, s := range c.segs {
		gens[s.sf.keyGen]++
	}
	if gens[2] == 0 || gens[1] == 0 {
		t.Fatalf("after the kill: files by generation %v, want some of each", gens)
	}
	if gen, err := db.RotateKeys(nil); err != nil || gen != 2 {
		t.Fatalf("resumed rotation: generation %d, %v (want 2: resumed, not a new one)", gen, err)
	}
	for _, s := range c.segs {
		if s.sf.keyGen != 2 {
			t.Fatalf("%s still at generation %d", s.sf.path, s.sf.keyGen)
		}
	}
	expectRecords(t, c, recs)
	db.Close()
}

// TestEncryptedStoreFromBeforeSealedSegments: an encrypted store whose
// segment files were written before they were sealed (plaintext files,
// as the first encrypted release wrote them) opens and reads; RotateKeys
// rewrites those files sealed, after which no plaintext is left.
func TestEncryptedStoreFromBeforeSealedSegments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	k := testKey("old format")
	// KEYS as the first encrypted build wrote it: no sealed-manifests
	// flag (a directory holding only KEYS is created with those keys).
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeKeys(testOpts().withDefaults().FS, dir, crypt.New(), k); err != nil {
		t.Fatal(err)
	}
	db := openT(t, dir, encOpts(k))
	if db.keys.Flags() != 0 {
		t.Fatal("KEYS of an old store has flags")
	}
	c, err := db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.L2, Fingerprint: "fp"})
	if err != nil {
		t.Fatal(err)
	}
	recs := secretRecords("alice", 10)
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	keys := db.keyRef.Load()
	db.keyRef.Store(nil) // the files this flush writes are plaintext, as before sealing
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.keyRef.Store(keys)
	if found := scanDir(t, filepath.Join(dir, "seg"), needlesOf(recs)); len(found) == 0 {
		t.Fatal("the old-format file is not plaintext: the test tests nothing")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir, encOpts(k))
	c, _ = db.Collection("notes")
	expectRecords(t, c, recs)
	if db.keys.Flags()&crypt.FlagSealedManifests != 0 {
		t.Fatal("flag set before any sealed manifest was written")
	}
	if gen, err := db.RotateKeys(nil); err != nil || gen != 2 {
		t.Fatalf("rotate: %d %v", gen, err)
	}
	expectRecords(t, c, recs)
	if db.keys.Flags()&crypt.FlagSealedManifests == 0 {
		t.Fatal("sealed manifests written, KEYS does not say so")
	}
	db.Close()
	if found := scanDir(t, dir, needlesOf(recs)); len(found) > 0 {
		t.Fatalf("plaintext after the rotation: %q", found)
	}
}
