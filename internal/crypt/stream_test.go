package crypt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

func sealStream(t testing.TB, s Secret, plain []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewStreamWriter(&buf, s, MinKDF)
	if err != nil {
		t.Fatal(err)
	}
	// Uneven writes, so chunk boundaries fall inside them.
	for rest := plain; len(rest) > 0; {
		n := min(len(rest), 1+len(rest)%7919)
		if _, err := w.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func openStream(s Secret, sealed []byte) ([]byte, error) {
	r, err := NewStreamReader(bytes.NewReader(sealed), s)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func TestStreamRoundTrip(t *testing.T) {
	pass := Secret{Passphrase: []byte("correct horse")}
	key := Secret{Key: bytes.Repeat([]byte{7}, KeySize)}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, StreamChunk - 1, StreamChunk, StreamChunk + 1, 3*StreamChunk + 17} {
		plain := make([]byte, n)
		for i := range plain {
			plain[i] = byte(rng.IntN(256))
		}
		for _, s := range []Secret{pass, key} {
			sealed := sealStream(t, s, plain)
			got, err := openStream(s, sealed)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("%d bytes: got %d bytes, err %v", n, len(got), err)
			}
			if n >= 16 && bytes.Contains(sealed, plain[:16]) {
				t.Fatalf("%d bytes: plaintext visible in the sealed stream", n)
			}
		}
	}
}

func TestStreamWrongKey(t *testing.T) {
	sealed := sealStream(t, Secret{Passphrase: []byte("right")}, []byte("the memory"))
	for _, s := range []Secret{{Passphrase: []byte("wrong")}, {Key: bytes.Repeat([]byte{1}, KeySize)}} {
		if _, err := openStream(s, sealed); !errors.Is(err, ErrWrongKey) {
			t.Fatalf("%+v: err = %v, want ErrWrongKey", s, err)
		}
	}
	byKey := sealStream(t, Secret{Key: bytes.Repeat([]byte{2}, KeySize)}, []byte("x"))
	if _, err := openStream(Secret{Passphrase: []byte("p")}, byKey); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("passphrase on a key-file stream: %v", err)
	}
	if _, err := openStream(Secret{Key: bytes.Repeat([]byte{3}, KeySize)}, byKey); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("other key file: %v", err)
	}
}

// TestStreamDamage flips every byte, cuts the stream at every length and
// reorders or drops chunks: each is an error (header damage ErrCorrupt, body
// damage ErrAuth), never different plaintext.
func TestStreamDamage(t *testing.T) {
	s := Secret{Key: bytes.Repeat([]byte{9}, KeySize)}
	plain := bytes.Repeat([]byte("remember: Alice moved to Berlin. "), 3000) // 2 chunks
	sealed := sealStream(t, s, plain)
	hdrLen := 16 + streamIDSize + Overhead + 4
	for i := 0; i < len(sealed); i += 1 + i/64 {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x20
		got, err := openStream(s, bad)
		if err == nil {
			t.Fatalf("flip at %d: no error (%d bytes)", i, len(got))
		}
		want := ErrAuth
		if i < hdrLen {
			want = ErrCorrupt
		}
		if !errors.Is(err, want) {
			t.Fatalf("flip at %d: err = %v, want %v", i, err, want)
		}
	}
	for n := 0; n < len(sealed); n += 1 + n/32 {
		if _, err := openStream(s, sealed[:n]); err == nil {
			t.Fatalf("cut at %d of %d: no error", n, len(sealed))
		}
	}
	if _, err := openStream(s, append(bytes.Clone(sealed), 0)); !errors.Is(err, ErrAuth) {
		t.Fatalf("trailing byte: %v", err)
	}
	// The chunks, by their length prefixes.
	var chunks [][]byte
	for rest := sealed[hdrLen:]; len(rest) > 0; {
		n := 4 + int(uint32(rest[0])|uint32(rest[1])<<8|uint32(rest[2])<<16|uint32(rest[3])<<24)
		chunks = append(chunks, rest[:n])
		rest = rest[n:]
	}
	if len(chunks) != 2 {
		t.Fatalf("%d chunks, want 2", len(chunks))
	}
	swapped := append(append(bytes.Clone(sealed[:hdrLen]), chunks[1]...), chunks[0]...)
	if _, err := openStream(s, swapped); !errors.Is(err, ErrAuth) {
		t.Fatalf("swapped chunks: %v", err)
	}
	dropLast := append(bytes.Clone(sealed[:hdrLen]), chunks[0]...)
	if _, err := openStream(s, dropLast); !errors.Is(err, ErrAuth) {
		t.Fatalf("last chunk dropped: %v", err)
	}
	// A chunk of another stream sealed with the same key file.
	other := sealStream(t, s, plain)
	mixed := append(bytes.Clone(sealed[:hdrLen+len(chunks[0])]), other[hdrLen+len(chunks[0]):]...)
	if _, err := openStream(s, mixed); !errors.Is(err, ErrAuth) {
		t.Fatalf("chunk from another stream: %v", err)
	}
}

func FuzzStreamReader(f *testing.F) {
	s := Secret{Key: bytes.Repeat([]byte{5}, KeySize)}
	f.Add(sealStream(f, s, nil))
	f.Add(sealStream(f, s, []byte("Alice 的女儿今年上小学")))
	f.Add(sealStream(f, Secret{Passphrase: []byte("p")}, []byte("x")))
	f.Add([]byte(StreamMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, sec := range []Secret{s, {Passphrase: []byte("p")}} {
			r, err := NewStreamReader(bytes.NewReader(b), sec)
			if err != nil {
				continue
			}
			io.Copy(io.Discard, r)
		}
	})
}

// TestStreamRefusesCostlyHeader: a header that names 4 GiB of argon2id memory (its CRC made to
// hold) is refused before anything is derived, and the writer will not make one.
func TestStreamRefusesCostlyHeader(t *testing.T) {
	s := Secret{Passphrase: []byte("p")}
	if _, err := NewStreamWriter(io.Discard, s, KDF{Time: 1, MemoryKiB: maxStreamMemoryKiB + 1, Threads: 1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("writer with too much memory: %v", err)
	}
	sealed := sealStream(t, s, []byte("x"))
	hdrEnd := 16 + streamIDSize + 10 + saltSize
	bad := bytes.Clone(sealed)
	binary.LittleEndian.PutUint32(bad[16+streamIDSize+4:], 4<<20)
	binary.LittleEndian.PutUint32(bad[hdrEnd+Overhead:], crc32.Checksum(bad[:hdrEnd+Overhead], castagnoli))
	start := time.Now()
	if _, err := openStream(s, bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("4 GiB header: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("refusing took %v: something was derived", d)
	}
}
