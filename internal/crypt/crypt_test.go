package crypt

import (
	"bytes"
	"errors"
	"testing"
)

var pass = Secret{Passphrase: []byte("correct horse battery staple")}

func TestKeysRoundTrip(t *testing.T) {
	k := New()
	a, _ := k.Ensure("alice")
	b, created := k.Ensure("bob")
	if !created {
		t.Fatal("bob's key not created")
	}
	if _, again := k.Ensure("alice"); again {
		t.Fatal("alice's key created twice")
	}
	for _, s := range []Secret{pass, {Key: bytes.Repeat([]byte{7}, KeySize)}} {
		file, err := Encode(k, s, MinKDF)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(file, s)
		if err != nil {
			t.Fatal(err)
		}
		if got.Sessions() != 2 || !got.Has(a) || !got.Has(b) {
			t.Fatalf("decoded keys differ")
		}
		aad := AAD(FileWAL, 0, 1, 2, a)
		sealed, err := k.Seal(nil, a, aad, []byte("hello"))
		if err != nil {
			t.Fatal(err)
		}
		if pt, err := got.Open(nil, a, aad, sealed); err != nil || string(pt) != "hello" {
			t.Fatalf("open: %q %v", pt, err)
		}
		if _, err := got.Open(nil, a, AAD(FileWAL, 0, 1, 3, a), sealed); !errors.Is(err, ErrAuth) {
			t.Fatalf("moved unit opened: %v", err)
		}
		if _, err := got.Open(nil, b, aad, sealed); !errors.Is(err, ErrAuth) {
			t.Fatalf("unit opened with another key: %v", err)
		}
	}
}

func TestWrongSecretAndDamage(t *testing.T) {
	k := New()
	k.Ensure("s")
	file, err := Encode(k, pass, MinKDF)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(file, Secret{Passphrase: []byte("wrong")}); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("wrong passphrase: %v", err)
	}
	if _, err := Decode(file, Secret{Key: make([]byte, KeySize)}); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("key file for a passphrase store: %v", err)
	}
	for i := range file {
		bad := bytes.Clone(file)
		bad[i] ^= 0x10
		if _, err := Decode(bad, pass); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v, want ErrCorrupt", i, err)
		}
	}
	if _, err := Decode(file[:len(file)-1], pass); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated: %v", err)
	}
}

func TestDestroy(t *testing.T) {
	k := New()
	id, _ := k.Ensure("gone")
	sealed, _ := k.Seal(nil, id, nil, []byte("secret"))
	if !k.Destroy("gone") {
		t.Fatal("not destroyed")
	}
	file, _ := Encode(k, pass, MinKDF)
	k2, err := Decode(file, pass)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Open(nil, id, nil, sealed); !errors.Is(err, ErrNoKey) {
		t.Fatalf("destroyed key still opens: %v", err)
	}
	// The session written again gets a new key under a new id: the old
	// unit stays absent, not damaged.
	if id2, created := k2.Ensure("gone"); !created || id2 == id {
		t.Fatal("no new key id for a session written again")
	}
	if _, err := k2.Open(nil, id, nil, sealed); !errors.Is(err, ErrNoKey) {
		t.Fatalf("old unit under a new key: %v", err)
	}
}

func TestParseKeyFile(t *testing.T) {
	f := NewKeyFile()
	k, err := ParseKeyFile(f)
	if err != nil || len(k) != KeySize {
		t.Fatal(err)
	}
	if _, err := ParseKeyFile([]byte("short")); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
}

func FuzzDecode(f *testing.F) {
	k := New()
	k.Ensure("x")
	file, _ := Encode(k, pass, MinKDF)
	f.Add(file)
	raw, _ := Encode(k, Secret{Key: make([]byte, KeySize)}, KDF{})
	f.Add(raw)
	f.Fuzz(func(t *testing.T, b []byte) {
		// A raw-key file never runs argon2: fuzz the whole decoder
		// cheaply; passphrase files only up to their header.
		if h, err := ReadHeader(b); err == nil && !h.Passphrase {
			Decode(b, Secret{Key: make([]byte, KeySize)})
		}
	})
}

func FuzzOpen(f *testing.F) {
	k := New()
	s, _ := k.Seal(nil, StoreID, nil, []byte("x"))
	f.Add(s)
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := k.Open(nil, StoreID, nil, b); err == nil && !bytes.Equal(b, s) {
			t.Fatal("forged unit opened")
		}
	})
}

// TestRotateRoundTrip: a rotation's retired keys survive Encode/Decode,
// what the old generation sealed still opens, Destroy takes a session's
// retired keys too, and DropRetired the rest.
func TestRotateRoundTrip(t *testing.T) {
	k := New()
	old, _ := k.Ensure("alice")
	k.Ensure("bob")
	sealed, _ := k.Seal(nil, StoreID, []byte("aad"), []byte("under generation 1"))
	seg, err := k.SegmentSealer(1, 7, k.KeyIDs([]string{"alice", "bob"}))
	if err != nil {
		t.Fatal(err)
	}
	chunk := seg.Seal(nil, []byte("a"), []byte("file sealed at 1"))
	oldIDs := k.KeyIDs([]string{"alice", "bob"})
	k.Rotate()
	if k.Generation() != 2 || !k.Retired() {
		t.Fatalf("generation %d, retired %v", k.Generation(), k.Retired())
	}
	if cur, _ := k.Lookup("alice"); cur == old {
		t.Fatal("alice kept her key id")
	}
	file, err := Encode(k, pass, MinKDF)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := Decode(file, pass)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k2.Open(nil, StoreID, []byte("aad"), sealed); err != nil || string(got) != "under generation 1" {
		t.Fatalf("retired store key: %q %v", got, err)
	}
	seg2, err := k2.SegmentSealer(1, 7, oldIDs)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := seg2.Open(nil, []byte("a"), chunk); err != nil || string(got) != "file sealed at 1" {
		t.Fatalf("retired file key: %q %v", got, err)
	}
	if n := len(k2.AllKeyIDs("alice")); n != 2 {
		t.Fatalf("alice has %d keys, want 2", n)
	}
	k2.Destroy("alice")
	if n := len(k2.AllKeyIDs("alice")); n != 0 {
		t.Fatalf("alice keeps %d keys", n)
	}
	if _, err := k2.SegmentSealer(1, 7, oldIDs); !errors.Is(err, ErrNoKey) {
		t.Fatalf("a file that held alice: %v", err)
	}
	k2.DropRetired()
	if k2.Retired() || k2.HasGeneration(1) || len(k2.AllKeyIDs("bob")) != 1 {
		t.Fatal("retired keys left")
	}
	if _, err := k2.Open(nil, StoreID, []byte("aad"), sealed); err == nil {
		t.Fatal("dropped generation still opens")
	}
}

// FuzzDecodeList: the key list inside a KEYS seal (reached only with the
// right key, so fuzzed directly) never panics.
func FuzzDecodeList(f *testing.F) {
	k := New()
	k.Ensure("x")
	f.Add(k.encodeList())
	k.Rotate()
	k.Ensure("y")
	f.Add(k.encodeList())
	f.Fuzz(func(t *testing.T, b []byte) {
		if k, err := decodeList(b); err == nil {
			if _, err := decodeList(k.encodeList()); err != nil {
				t.Fatalf("re-encoded list does not decode: %v", err)
			}
		}
	})
}
