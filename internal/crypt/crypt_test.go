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
