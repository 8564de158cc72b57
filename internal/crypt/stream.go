package crypt

import (
	"bufio"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"golang.org/x/crypto/chacha20poly1305"
)

// A sealed stream is a file sealed under a passphrase or key file of its own,
// with no KEYS file: what `memctl export --encrypt` writes (docs/format/
// export.md, "Sealed exports"). Its header carries the key derivation and a
// key check, so a wrong passphrase is told apart from damage; the body is
// chunks of at most StreamChunk bytes, each sealed with its index in the AAD
// and the last one marked, so chunks cannot be reordered, dropped or
// truncated away unnoticed.

// StreamMagic begins every sealed stream.
const StreamMagic = "ENGRMEXP"

// StreamChunk is the most plaintext one chunk holds.
const StreamChunk = 64 << 10

const streamVersion = 1

const streamIDSize = 16

// maxStreamMemoryKiB bounds the argon2id memory a sealed stream may name: an export can come
// from someone else, and its header must not make the reader allocate gigabytes.
const maxStreamMemoryKiB = 1 << 20

// IsSealedStream reports whether prefix (at least the first 8 bytes of a
// file) begins a sealed stream.
func IsSealedStream(prefix []byte) bool {
	return len(prefix) >= len(StreamMagic) && string(prefix[:len(StreamMagic)]) == StreamMagic
}

// streamAAD binds a chunk to its stream (the header's bytes), its index and
// whether it is the last.
func streamAAD(hdr []byte, index uint64, last bool) []byte {
	var final uint32
	if last {
		final = 1
	}
	return append(AAD(FileExport, 0, final, index, StoreID), hdr...)
}

// keyCheckAAD is the AAD of the empty unit in the header that proves the key.
func keyCheckAAD(hdr []byte) []byte {
	return append(AAD(FileExport, 0, 2, 0, StoreID), hdr...)
}

// StreamWriter seals what is written to it into a sealed stream. Close
// writes the last chunk; a stream without it reads as truncated.
type StreamWriter struct {
	w      io.Writer
	a      cipher.AEAD
	hdr    []byte
	buf    []byte
	out    []byte
	index  uint64
	closed bool
	err    error
}

// NewStreamWriter writes a sealed stream's header to w and returns the
// writer for its body. p is the argon2id cost (ignored for a key file).
func NewStreamWriter(w io.Writer, s Secret, p KDF) (*StreamWriter, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	p = p.withDefaults()
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if p.MemoryKiB > maxStreamMemoryKiB {
		return nil, fmt.Errorf("%w: a sealed stream's argon2id memory is at most %d KiB", ErrInvalid, maxStreamMemoryKiB)
	}
	hdr := append([]byte(StreamMagic), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(hdr[8:], streamVersion)
	kdf := byte(kdfArgon2id)
	if len(s.Key) > 0 {
		kdf = kdfRaw
	}
	hdr = append(hdr, kdf, 0, 0, 0)
	// A random stream id: with a key file there is no salt, and the id keeps
	// one export's chunks from being spliced into another's.
	var id [streamIDSize]byte
	rand.Read(id[:])
	hdr = append(hdr, id[:]...)
	var salt []byte
	if kdf == kdfArgon2id {
		hdr = binary.LittleEndian.AppendUint32(hdr, p.Time)
		hdr = binary.LittleEndian.AppendUint32(hdr, p.MemoryKiB)
		salt = make([]byte, saltSize)
		rand.Read(salt)
		hdr = append(hdr, p.Threads, saltSize)
		hdr = append(hdr, salt...)
	}
	a, err := chacha20poly1305.NewX(deriveKEK(s, hdr[12], p, salt))
	if err != nil {
		return nil, err
	}
	full := sealWith(a, slices.Clone(hdr), keyCheckAAD(hdr), nil)
	full = binary.LittleEndian.AppendUint32(full, crc32.Checksum(full, castagnoli))
	if _, err := w.Write(full); err != nil {
		return nil, err
	}
	return &StreamWriter{w: w, a: a, hdr: hdr, buf: make([]byte, 0, StreamChunk)}, nil
}

// Write buffers p and seals every full chunk.
func (sw *StreamWriter) Write(p []byte) (int, error) {
	if sw.err != nil {
		return 0, sw.err
	}
	if sw.closed {
		return 0, errors.New("crypt: write to a closed stream")
	}
	n := len(p)
	for len(p) > 0 {
		take := min(len(p), StreamChunk-len(sw.buf))
		sw.buf = append(sw.buf, p[:take]...)
		p = p[take:]
		// A full chunk is sealed only when more follows, so that Close
		// can always mark the last one (an empty last chunk otherwise).
		if len(sw.buf) == StreamChunk && len(p) > 0 {
			if err := sw.flush(false); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

func (sw *StreamWriter) flush(last bool) error {
	sw.out = sw.out[:0]
	sw.out = binary.LittleEndian.AppendUint32(sw.out, uint32(len(sw.buf)+Overhead))
	sw.out = sealWith(sw.a, sw.out, streamAAD(sw.hdr, sw.index, last), sw.buf)
	sw.index++
	sw.buf = sw.buf[:0]
	if _, err := sw.w.Write(sw.out); err != nil {
		sw.err = err
		return err
	}
	return nil
}

// Close seals what is buffered as the last chunk. It does not close the
// underlying writer.
func (sw *StreamWriter) Close() error {
	if sw.closed {
		return sw.err
	}
	sw.closed = true
	if sw.err != nil {
		return sw.err
	}
	return sw.flush(true)
}

// StreamReader opens a sealed stream.
type StreamReader struct {
	r     *bufio.Reader
	a     cipher.AEAD
	hdr   []byte
	index uint64
	plain []byte
	off   int
	done  bool
	err   error
	in    []byte
}

// NewStreamReader reads and checks a sealed stream's header from r.
// ErrCorrupt: the header is damaged or not a sealed stream; ErrWrongKey:
// it is intact and s does not open it. Reads of the body fail with ErrAuth
// when a chunk is damaged, missing, reordered or the stream is cut short.
func NewStreamReader(r io.Reader, s Secret) (*StreamReader, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	br := bufio.NewReader(r)
	corrupt := func(format string, a ...any) error {
		return fmt.Errorf("%w: sealed stream: %s", ErrCorrupt, fmt.Sprintf(format, a...))
	}
	fixed := make([]byte, 16+streamIDSize)
	if _, err := io.ReadFull(br, fixed); err != nil {
		return nil, corrupt("header cut short")
	}
	if !IsSealedStream(fixed) {
		return nil, corrupt("not a sealed stream (bad magic)")
	}
	if v := binary.LittleEndian.Uint32(fixed[8:]); v != streamVersion {
		return nil, corrupt("version %d, this build reads %d", v, streamVersion)
	}
	if fixed[13] != 0 || fixed[14] != 0 || fixed[15] != 0 {
		return nil, corrupt("reserved bytes set")
	}
	hdr := fixed
	var p KDF
	var salt []byte
	switch fixed[12] {
	case kdfRaw:
		if len(s.Key) == 0 {
			return nil, fmt.Errorf("%w: this export was sealed with a key file, not a passphrase", ErrWrongKey)
		}
	case kdfArgon2id:
		if len(s.Passphrase) == 0 {
			return nil, fmt.Errorf("%w: this export was sealed with a passphrase, not a key file", ErrWrongKey)
		}
		rest := make([]byte, 10+saltSize)
		if _, err := io.ReadFull(br, rest); err != nil {
			return nil, corrupt("header cut short")
		}
		hdr = append(hdr, rest...)
		p = KDF{Time: binary.LittleEndian.Uint32(rest), MemoryKiB: binary.LittleEndian.Uint32(rest[4:]), Threads: rest[8]}
		if rest[9] != saltSize {
			return nil, corrupt("salt of %d bytes", rest[9])
		}
		salt = rest[10:]
	default:
		return nil, corrupt("unknown key derivation %d", fixed[12])
	}
	check := make([]byte, Overhead+4)
	if _, err := io.ReadFull(br, check); err != nil {
		return nil, corrupt("header cut short")
	}
	whole := append(slices.Clone(hdr), check[:Overhead]...)
	if crc32.Checksum(whole, castagnoli) != binary.LittleEndian.Uint32(check[Overhead:]) {
		return nil, corrupt("header checksum mismatch")
	}
	// The CRC holds, so the parameters are what the writer chose; still
	// bound them before deriving anything from a crafted file.
	if fixed[12] == kdfArgon2id {
		if err := p.check(); err != nil {
			return nil, corrupt("%v", err)
		}
		if p.MemoryKiB > maxStreamMemoryKiB {
			return nil, corrupt("argon2id memory %d KiB over the %d KiB a sealed stream may name", p.MemoryKiB, maxStreamMemoryKiB)
		}
	}
	a, err := chacha20poly1305.NewX(deriveKEK(s, fixed[12], p, salt))
	if err != nil {
		return nil, err
	}
	if _, err := openWith(a, nil, keyCheckAAD(hdr), check[:Overhead]); err != nil {
		return nil, ErrWrongKey
	}
	return &StreamReader{r: br, a: a, hdr: hdr}, nil
}

// Read returns the stream's plaintext, one authenticated chunk at a time.
func (sr *StreamReader) Read(p []byte) (int, error) {
	for sr.off == len(sr.plain) {
		if sr.err != nil {
			return 0, sr.err
		}
		if sr.done {
			return 0, io.EOF
		}
		sr.err = sr.next()
	}
	n := copy(p, sr.plain[sr.off:])
	sr.off += n
	return n, nil
}

// next reads and opens one chunk.
func (sr *StreamReader) next() error {
	auth := func(format string, a ...any) error {
		return fmt.Errorf("%w: sealed stream, chunk %d: %s", ErrAuth, sr.index, fmt.Sprintf(format, a...))
	}
	var lb [4]byte
	if _, err := io.ReadFull(sr.r, lb[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return auth("the stream ends before its last chunk (truncated)")
		}
		return err
	}
	n := binary.LittleEndian.Uint32(lb[:])
	if n < Overhead || n > StreamChunk+Overhead {
		return auth("length %d out of range", n)
	}
	sr.in = slices.Grow(sr.in[:0], int(n))[:n]
	if _, err := io.ReadFull(sr.r, sr.in); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return auth("the stream ends inside a chunk (truncated)")
		}
		return err
	}
	plain, err := openWith(sr.a, sr.plain[:0], streamAAD(sr.hdr, sr.index, false), sr.in)
	last := false
	if err != nil {
		if plain, err = openWith(sr.a, sr.plain[:0], streamAAD(sr.hdr, sr.index, true), sr.in); err != nil {
			return auth("damaged, moved or forged")
		}
		last = true
	}
	sr.plain, sr.off = plain, 0
	sr.index++
	if last {
		if _, err := sr.r.ReadByte(); err == nil {
			sr.plain = sr.plain[:0]
			return auth("data after the last chunk")
		}
		sr.done = true
	}
	return nil
}
