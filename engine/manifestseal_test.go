package engine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSealedManifestTamper: in an encrypted store a manifest is bound to
// its number and every byte of its structure: a changed byte anywhere in
// the body (its CRC fixed up, so only the seal can tell), the manifest
// copied under another number, or a plaintext manifest put in its place
// is corruption naming the file, never data.
func TestSealedManifestTamper(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	k := testKey("manifest tamper")
	db, c, recs := sealedStore(t, dir, k)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(recs[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := db.KV().Put("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	num := db.manNum
	fsys := db.opts.FS // keyed
	db.Close()
	path := filepath.Join(dir, manifestFileName(num))
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := readManifestFile(fsys, path)
	if err != nil || string(m.kv["k"]) != "v" || len(m.colls[0].segs[0].deleted) != 1 {
		t.Fatalf("intact manifest: %+v %v", m, err)
	}
	read := func(b []byte, name string) error {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := readManifestFile(fsys, p)
		return err
	}
	// Every byte of the body, the CRC made to hold again.
	for off := 20; off < len(orig); off++ {
		b := append([]byte(nil), orig...)
		b[off] ^= 0x01
		refixCRC(b)
		err := read(b, manifestFileName(num))
		if err == nil {
			// Only a change the decoder itself rejects or the seal
			// catches is acceptable; a change that reads is a forgery.
			t.Fatalf("byte %d changed: the manifest still reads", off)
		}
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrKeyDestroyed) {
			t.Fatalf("byte %d changed: %v", off, err)
		}
	}
	if err := read(orig, manifestFileName(num+1)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("copied under another number: %v", err)
	}
	// A plaintext manifest with the same content, in place of the sealed one.
	plain := encodeManifest(m)
	if err := read(plain, manifestFileName(num)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("plaintext manifest in a sealed store: %v", err)
	}
}

// refixCRC makes a manifest's own checksum match its body again.
func refixCRC(b []byte) {
	le.PutUint32(b[16:], crc(b[20:]))
}
