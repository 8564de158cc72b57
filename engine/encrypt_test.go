package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/quant"
)

// testKey is a passphrase at the cheapest argon2id cost a KEYS file may
// name, so tests do not spend a second per open.
func testKey(pass string) *Key {
	return &Key{Passphrase: []byte(pass), ArgonTime: 1, ArgonMemoryKiB: 8 << 10, ArgonThreads: 1}
}

func encOpts(k *Key) Options {
	o := testOpts()
	o.Key = k
	return o
}

// secretRecords are records whose text, IDs, metadata and vectors are
// distinctive enough to be found by a byte scan.
func secretRecords(session string, n int) []Record {
	out := make([]Record, n)
	for i := range out {
		v := make([]float32, 8)
		for j := range v {
			v[j] = float32(i*8+j) + 0.123456789
		}
		out[i] = Record{ID: session + "-id-" + string(rune('a'+i)), Vector: v,
			Text: "ZEBRA-SECRET-" + session + "-" + string(rune('a'+i)) + " the launch code",
			Meta: Metadata{"session": String(session), "topic": String("PLUM-META-" + session)}}
	}
	return out
}

func vecBytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// scanDir returns the needles found in any file under dir.
func scanDir(t *testing.T, dir string, needles [][]byte) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range needles {
			if bytes.Contains(b, n) {
				found = append(found, path+": "+string(n))
			}
		}
		return nil
	})
	return found
}

func needlesOf(recs []Record) [][]byte {
	var n [][]byte
	for _, r := range recs {
		n = append(n, []byte(r.Text), []byte(r.ID), vecBytes(r.Vector), vecBytes(r.Vector[:2]))
		if s, ok := r.Meta["topic"].Str(); ok {
			n = append(n, []byte(s))
		}
	}
	return n
}

// snapshot is every file under dir with its bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			m[path] = "dir"
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m[path] = string(b)
		return nil
	})
	return m
}

// TestEncryptedWAL writes distinctive records into an encrypted store and
// leaves them in the WAL only (as a kill -9 would): no byte of their text,
// IDs, metadata or vectors is in the directory, and a reopen with the key
// replays them.
func TestEncryptedWAL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	k := testKey("hunter2 but longer")
	db := openT(t, dir, encOpts(k))
	if !db.Encrypted() {
		t.Fatal("store not encrypted")
	}
	c, err := db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.L2, Fingerprint: "fp"})
	if err != nil {
		t.Fatal(err)
	}
	recs := append(secretRecords("alice", 5), secretRecords("bob", 5)...)
	recs = append(recs, Record{ID: "nosession", Vector: recs[0].Vector, Text: "ZEBRA-SECRET-none"})
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := db.KV().Put("k", []byte("KV-SECRET-VALUE")); err != nil {
		t.Fatal(err)
	}
	db.noCloseFlush = true
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	needles := append(needlesOf(recs), []byte("KV-SECRET-VALUE"), []byte("notes"), []byte("alice"))
	if found := scanDir(t, dir, needles); len(found) > 0 {
		t.Fatalf("plaintext in an encrypted store: %q", found)
	}
	if fi, err := os.Stat(filepath.Join(dir, keysName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("KEYS: %v %v", fi, err)
	}
	db = openT(t, dir, encOpts(k))
	c, _ = db.Collection("notes")
	for _, r := range recs {
		got, err := c.Get(r.ID)
		if err != nil || got.Text != r.Text || !bytes.Equal(vecBytes(got.Vector), vecBytes(r.Vector)) {
			t.Fatalf("Get(%s) = %+v, %v", r.ID, got, err)
		}
	}
	if v, err := db.KV().Get("k"); err != nil || string(v) != "KV-SECRET-VALUE" {
		t.Fatalf("KV = %q %v", v, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEncryptedOpenRefusals: wrong passphrase, no key, a key for a
// plaintext store, a key file for a passphrase store: a clear error and
// not one byte written.
func TestEncryptedOpenRefusals(t *testing.T) {
	leaveDamaged(t)
	dir := filepath.Join(t.TempDir(), "store")
	db := openT(t, dir, encOpts(testKey("right passphrase")))
	if _, err := db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.L2, Fingerprint: "fp"}); err != nil {
		t.Fatal(err)
	}
	db.noCloseFlush = true
	db.Close()
	before := snapshot(t, dir)
	for _, tc := range []struct {
		name string
		key  *Key
		want error
	}{
		{"wrong passphrase", testKey("wrong passphrase"), ErrWrongKey},
		{"key file", &Key{KeyFile: NewKeyFile()}, ErrWrongKey},
		{"no key", nil, ErrKeyRequired},
		{"both", &Key{Passphrase: []byte("x"), KeyFile: NewKeyFile()}, ErrInvalid},
	} {
		for _, ro := range []bool{false, true} {
			o := encOpts(tc.key)
			o.ReadOnly = ro
			if _, err := Open(dir, o); !errors.Is(err, tc.want) {
				t.Errorf("%s (read-only %v): %v, want %v", tc.name, ro, err, tc.want)
			}
		}
	}
	if _, err := CheckDir(dir, Options{Key: testKey("wrong")}, nil); !errors.Is(err, ErrWrongKey) {
		t.Errorf("CheckDir with a wrong key: %v", err)
	}
	after := snapshot(t, dir)
	if len(before) != len(after) {
		t.Fatalf("files changed: %d -> %d", len(before), len(after))
	}
	for p, b := range before {
		if after[p] != b {
			t.Fatalf("%s changed by a refused open", p)
		}
	}
	plain := filepath.Join(t.TempDir(), "plain")
	pdb := openT(t, plain, testOpts())
	pdb.Close()
	if _, err := Open(plain, encOpts(testKey("x"))); !errors.Is(err, ErrInvalid) {
		t.Fatalf("key for a plaintext store: %v", err)
	}
	// Damage to KEYS is corruption, not a wrong passphrase.
	kp := filepath.Join(dir, keysName)
	b, _ := os.ReadFile(kp)
	b[len(b)/2] ^= 1
	os.WriteFile(kp, b, 0o600)
	if _, err := Open(dir, encOpts(testKey("right passphrase"))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged KEYS: %v", err)
	}
}

// TestChangeKey re-seals the keys under a new passphrase, then a key
// file: the data stays, the old secret stops working, KEYS alone changed.
func TestChangeKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	old := testKey("old passphrase")
	db, err := Open(dir, encOpts(old))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.L2, Fingerprint: "fp"})
	recs := secretRecords("s1", 3)
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	db.noCloseFlush = true
	db.Close()
	before := snapshot(t, dir)
	newer := testKey("new passphrase")
	if err := ChangeKey(dir, Options{}, testKey("not it"), newer); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("ChangeKey with a wrong old key: %v", err)
	}
	if err := ChangeKey(dir, Options{}, old, newer); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, dir)
	for p, b := range before {
		if filepath.Base(p) != keysName && after[p] != b {
			t.Fatalf("%s rewritten by a passphrase change", p)
		}
	}
	if _, err := Open(dir, encOpts(old)); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("old passphrase after the change: %v", err)
	}
	kf := &Key{KeyFile: NewKeyFile()}
	if err := ChangeKey(dir, Options{}, newer, kf); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir, encOpts(kf))
	c, _ = db.Collection("notes")
	if got, err := c.Get(recs[1].ID); err != nil || got.Text != recs[1].Text {
		t.Fatalf("after the change: %+v %v", got, err)
	}
	db.Close()
}

// TestDestroySessionKey: the WAL records of a session whose key was
// destroyed are not replayed (they are unreadable), the other sessions'
// are; a session written again gets a new key.
func TestDestroySessionKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	k := testKey("pass phrase")
	db := openT(t, dir, encOpts(k))
	c, _ := db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.L2, Fingerprint: "fp"})
	alice, bob := secretRecords("alice", 4), secretRecords("bob", 4)
	if err := c.Upsert(ctx, append(alice[:2:2], bob...)); err != nil {
		t.Fatal(err)
	}
	if err := c.Upsert(ctx, alice[2:]); err != nil {
		t.Fatal(err)
	}
	// A copy of the directory before the purge: a backup taken then.
	backup := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(backup, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(alice))
	for i, r := range alice {
		ids[i] = r.ID
	}
	if _, err := c.Delete(ids...); err != nil {
		t.Fatal(err)
	}
	if ok, err := db.DestroySessionKey("alice"); err != nil || !ok {
		t.Fatalf("DestroySessionKey = %v, %v", ok, err)
	}
	db.noCloseFlush = true
	db.Close()
	db = openT(t, dir, encOpts(k))
	if db.purgedParts != 2 {
		t.Errorf("replay skipped %d parts, want 2", db.purgedParts)
	}
	c, _ = db.Collection("notes")
	for _, r := range bob {
		if got, err := c.Get(r.ID); err != nil || got.Text != r.Text {
			t.Fatalf("bob's %s: %v", r.ID, err)
		}
	}
	if err := c.Upsert(ctx, alice[:1]); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// The copy taken before the purge, opened with the store's current
	// keys: alice's records are not there, bob's are.
	cur, _ := os.ReadFile(filepath.Join(dir, keysName))
	os.WriteFile(filepath.Join(backup, keysName), cur, 0o600)
	os.Remove(filepath.Join(backup, "LOCK"))
	bdb := openT(t, backup, encOpts(k))
	bc, _ := bdb.Collection("notes")
	for _, r := range alice {
		if _, err := bc.Get(r.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("purged %s read from a copy taken before the purge: %v", r.ID, err)
		}
	}
	if _, err := bc.Get(bob[0].ID); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
}

// TestSealedWALTamper: a sealed record that was changed, replayed twice,
// moved, or replaced by a plaintext op fails (corruption), never applies.
func TestSealedWALTamper(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	db := openT(t, dir, encOpts(testKey("pass phrase")))
	defer db.Close()
	o := &walOp{op: walUpsert, coll: "c", records: append(secretRecords("a", 2), secretRecords("b", 1)...)}
	db.writeMu.Lock()
	p, err := db.sealOp(o)
	db.writeMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	db.walSeq = 0
	if ops, _, err := db.openOps(0, p); err != nil || len(ops) != 2 {
		t.Fatalf("openOps = %d ops, %v", len(ops), err)
	}
	if _, _, err := db.openOps(0, p); err == nil {
		t.Fatal("a record replayed twice was accepted")
	}
	for i := range p {
		db.walSeq = 0
		bad := bytes.Clone(p)
		bad[i] ^= 0x40
		if ops, _, err := db.openOps(0, bad); err == nil {
			t.Fatalf("byte %d flipped: accepted (%d ops)", i, len(ops))
		}
	}
	db.walSeq = 0
	if _, _, err := db.openOps(0, encodeOp(o)); err == nil {
		t.Fatal("a plaintext op in an encrypted store was accepted")
	}
}

// FuzzOpenOps feeds arbitrary bytes to the sealed WAL payload decoder: it
// must never panic and never accept what it was not given sealed.
func FuzzOpenOps(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "store")
	db, err := Open(dir, encOpts(testKey("fuzz passphrase")))
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	db.writeMu.Lock()
	p, err := db.sealOp(&walOp{op: walUpsert, coll: "c", records: append(secretRecords("a", 1), secretRecords("b", 1)...)})
	db.writeMu.Unlock()
	if err != nil {
		f.Fatal(err)
	}
	db.walSeq = 0
	want, _, err := db.openOps(0, p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(p)
	f.Add([]byte{walSealed, 1, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		db.walSeq = 0
		ops, _, err := db.openOps(0, b)
		if err != nil || len(ops) == 0 {
			// Parts under key ids this store lacks are skipped, as a
			// destroyed session's are (the fuzzing workers' keys differ).
			return
		}
		// Only the sealed ops themselves may come out (the framing's
		// varints may be spelled otherwise).
		if len(ops) != len(want) {
			t.Fatalf("accepted a forged record: %d ops", len(ops))
		}
		for i := range ops {
			if !bytes.Equal(encodeOp(ops[i]), encodeOp(want[i])) {
				t.Fatalf("accepted a forged op %d", i)
			}
		}
	})
}

// TestReleaseSessionKey: the key stays while any collection still holds a record of the
// session (another collection counts too), and is destroyed once none does; an unencrypted
// store and an unknown session are no-ops.
func TestReleaseSessionKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	db := openT(t, dir, encOpts(testKey("pass phrase")))
	defer db.Close()
	notes, _ := db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.L2, Fingerprint: "fp"})
	hist, _ := db.CreateCollection(CollectionConfig{Name: "history", Dim: 8, Metric: quant.L2, Fingerprint: "fp"})
	alice := secretRecords("alice", 3)
	if err := notes.Upsert(ctx, alice[:2]); err != nil {
		t.Fatal(err)
	}
	if err := hist.Upsert(ctx, alice[2:]); err != nil {
		t.Fatal(err)
	}
	if ok, err := db.ReleaseSessionKey("alice"); err != nil || ok {
		t.Fatalf("with records live: %v %v", ok, err)
	}
	if _, err := notes.Delete(alice[0].ID, alice[1].ID); err != nil {
		t.Fatal(err)
	}
	if ok, err := db.ReleaseSessionKey("alice"); err != nil || ok {
		t.Fatalf("with a record left in another collection: %v %v", ok, err)
	}
	if _, ok := db.keys.Lookup("alice"); !ok {
		t.Fatal("the key went while a record needed it")
	}
	if _, err := hist.Delete(alice[2].ID); err != nil {
		t.Fatal(err)
	}
	if ok, err := db.ReleaseSessionKey("alice"); err != nil || !ok {
		t.Fatalf("with nothing left: %v %v", ok, err)
	}
	if _, ok := db.keys.Lookup("alice"); ok {
		t.Fatal("the key is still in KEYS")
	}
	if ok, err := db.ReleaseSessionKey("nobody"); err != nil || ok {
		t.Fatalf("unknown session: %v %v", ok, err)
	}
	plain := openT(t, filepath.Join(t.TempDir(), "plain"), testOpts())
	defer plain.Close()
	if ok, err := plain.ReleaseSessionKey("alice"); err != nil || ok {
		t.Fatalf("unencrypted store: %v %v", ok, err)
	}
}
