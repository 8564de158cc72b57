package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/edsrzf/mmap-go"

	"github.com/engramdb/engram/internal/crypt"
	"github.com/engramdb/engram/internal/vfs"
)

// Sealed segment files (docs/format/encryption.md, "Segment files"): in an
// encrypted store every segment file is the plaintext segment of
// segment.md sealed in chunks of 64 KiB with XChaCha20-Poly1305, under a
// key derived from the store key, the file number and the key of every
// session the file holds records of (crypt.Keys.SegmentSealer). Open
// decrypts the whole file into anonymous memory (locked where the OS
// allows), so every reader of segment bytes (search, checks, repair)
// works on the plaintext image unchanged.
//
//	magic "ENGRMSSG" │ u32 version (=1) │ u32 chunk shift (=16) │ u64 file
//	u32 key generation │ u32 keys │ keys × key id (16) │ u32 CRC32C of every
//	header byte before it
//	chunks: nonce (24) ‖ ciphertext ‖ tag (16), each of 1<<shift plaintext
//	bytes, the last of 1 to 1<<shift
//
// AAD of chunk i: crypt.AAD(FileSegment, file, 0, i, zero id) ‖ u8 last ‖
// SHA-256 of the header, so a chunk cannot be moved, dropped from the end
// or paired with another header.

const (
	sealedSegMagic   = "ENGRMSSG"
	sealedSegVersion = 1
	sealedChunkShift = 16
	sealedHeaderMin  = 8 + 4 + 4 + 8 + 4 + 4 + 4
)

// ErrKeyDestroyed: a sealed file needs a key that is no longer in the
// store's KEYS (a purge destroyed the session's key, or DropRetiredKeys
// the generation's). Its contents cannot be read; for a segment file it
// matches ErrCorrupt too (a *CorruptionError), so Repair drops the file.
var ErrKeyDestroyed = errors.New("engine: sealed with a key that was destroyed (a purged session's, or a generation dropped after a rotation)")

// keyedFS is the file system of an encrypted store: the store's FS with
// the keys that seal and open its segment files. Files opened through it
// are the bytes on disk (a copy of one is still sealed); only segment
// reads (readSegBytes) and writes (writeSegmentFileLimited) unseal and
// seal.
type keyedFS struct {
	FS
	keys *atomic.Pointer[crypt.Keys]
}

// segmentKeys returns the keys of fsys's store, nil for a plaintext store.
func segmentKeys(fsys FS) *crypt.Keys {
	if k, ok := fsys.(keyedFS); ok {
		return k.keys.Load()
	}
	return nil
}

// sealedHeader is a sealed segment file's header.
type sealedHeader struct {
	shift uint
	file  uint64
	gen   uint32 // the store key's generation
	ids   [][crypt.IDSize]byte
	len   int    // bytes
	hash  []byte // SHA-256 of the header
}

func encodeSealedHeader(gen uint32, file uint64, ids [][crypt.IDSize]byte) []byte {
	b := append([]byte(nil), sealedSegMagic...)
	b = binary.LittleEndian.AppendUint32(b, sealedSegVersion)
	b = binary.LittleEndian.AppendUint32(b, sealedChunkShift)
	b = binary.LittleEndian.AppendUint64(b, file)
	b = binary.LittleEndian.AppendUint32(b, gen)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		b = append(b, id[:]...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// readSealedHeader reads and checks the header of a sealed file of size
// bytes. Damage is an error (the caller wraps it as corruption).
func readSealedHeader(f io.ReaderAt, size int64) (sealedHeader, error) {
	var h sealedHeader
	if size < sealedHeaderMin {
		return h, fmt.Errorf("sealed file of %d bytes is too short", size)
	}
	fixed := make([]byte, sealedHeaderMin-4)
	if _, err := f.ReadAt(fixed, 0); err != nil {
		return h, err
	}
	if string(fixed[:8]) != sealedSegMagic {
		return h, errors.New("bad sealed segment magic")
	}
	shift := binary.LittleEndian.Uint32(fixed[12:])
	n := int64(binary.LittleEndian.Uint32(fixed[28:]))
	hlen := int64(len(fixed)) + n*crypt.IDSize + 4
	if hlen > size {
		return h, fmt.Errorf("sealed header names %d keys, more than a file of %d bytes holds", n, size)
	}
	b := make([]byte, hlen)
	if _, err := f.ReadAt(b, 0); err != nil {
		return h, err
	}
	if crc32.Checksum(b[:hlen-4], castagnoli) != binary.LittleEndian.Uint32(b[hlen-4:]) {
		return h, errors.New("sealed header checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(fixed[8:]); v != sealedSegVersion {
		return h, fmt.Errorf("%w: sealed segment version %d, this build reads %d", ErrVersion, v, sealedSegVersion)
	}
	if shift < 12 || shift > 24 {
		return h, fmt.Errorf("sealed chunk size 1<<%d out of range", shift)
	}
	h.shift, h.file, h.gen, h.len = uint(shift), binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint32(b[24:]), int(hlen)
	h.ids = make([][crypt.IDSize]byte, n)
	for i := range h.ids {
		copy(h.ids[i][:], b[len(fixed)+i*crypt.IDSize:])
	}
	sum := sha256.Sum256(b)
	h.hash = sum[:]
	return h, nil
}

func sealedChunkAAD(file uint64, i uint64, last bool, headerHash []byte) []byte {
	aad := crypt.AAD(crypt.FileSegment, file, 0, i, crypt.StoreID)
	l := byte(0)
	if last {
		l = 1
	}
	return append(append(aad, l), headerHash...)
}

// sealWriter seals what is written to it in chunks of 1<<sealedChunkShift
// bytes; Close seals the last.
type sealWriter struct {
	w    io.Writer
	s    *crypt.Sealer
	file uint64
	hash []byte
	buf  []byte
	out  []byte
	i    uint64
}

func newSealWriter(w io.Writer, keys *crypt.Keys, file uint64, ids [][crypt.IDSize]byte) (*sealWriter, error) {
	gen := keys.Generation()
	s, err := keys.SegmentSealer(gen, file, ids)
	if err != nil {
		return nil, err
	}
	hdr := encodeSealedHeader(gen, file, ids)
	if _, err := w.Write(hdr); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(hdr)
	return &sealWriter{w: w, s: s, file: file, hash: sum[:], buf: make([]byte, 0, 1<<sealedChunkShift)}, nil
}

func (w *sealWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(w.buf) == cap(w.buf) {
			// Full: seal it now that more follows (so the last chunk is
			// known when Close comes, even on a chunk boundary).
			if err := w.emit(false); err != nil {
				return n - len(p), err
			}
		}
		k := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf, p = w.buf[:len(w.buf)+k], p[k:]
	}
	return n, nil
}

func (w *sealWriter) emit(last bool) error {
	w.out = w.s.Seal(w.out[:0], sealedChunkAAD(w.file, w.i, last, w.hash), w.buf)
	w.i++
	w.buf = w.buf[:0]
	_, err := w.w.Write(w.out)
	return err
}

// Close seals the last chunk (a segment is never empty).
func (w *sealWriter) Close() error { return w.emit(true) }

// isSealedSegment reports whether f starts as a sealed segment file.
func isSealedSegment(f io.ReaderAt) bool {
	b := make([]byte, len(sealedSegMagic))
	n, _ := f.ReadAt(b, 0)
	return n == len(b) && string(b) == sealedSegMagic
}

// segBytes is a segment file's contents: mapped (plaintext store) or the
// decrypted image of a sealed file.
type segBytes struct {
	data    []byte
	release func() error
	file    vfs.File // the open file of a mapped one (nil for an image)
	size    int64    // bytes on disk
	ids     [][crypt.IDSize]byte
	gen     uint32
	sealed  bool
	bad     []int // chunks that failed authentication (tolerant reads)
}

// close releases the bytes and closes the file.
func (b *segBytes) close() {
	_ = b.release()
	if b.file != nil {
		_ = b.file.Close()
	}
}

// readSegBytes opens the segment file at path: a plaintext file is mapped
// (the file stays open, for pread), a sealed one is decrypted into locked
// anonymous memory. tolerant (Repair) zero-fills chunks that fail
// authentication and lists them instead of failing; a file whose key is
// destroyed is then empty.
func readSegBytes(fsys FS, path string, tolerant bool) (*segBytes, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !isSealedSegment(f) {
		if st.Size() == 0 {
			_ = f.Close()
			return &segBytes{release: func() error { return nil }}, nil
		}
		m, unmap, err := vfs.Map(f)
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("engine: map %s: %w", path, err)
		}
		return &segBytes{data: m, release: unmap, file: f, size: st.Size()}, nil
	}
	defer f.Close()
	keys := segmentKeys(fsys)
	if keys == nil {
		return nil, fmt.Errorf("%w: %s is sealed: it belongs to an encrypted store (a backup taken without its keys opens once the store's KEYS file is copied into it)", ErrKeyRequired, path)
	}
	// Decrypt straight from the file's mapping (no copy).
	sealed, unmap, err := vfs.Map(f)
	if err != nil {
		return nil, fmt.Errorf("engine: map %s: %w", path, err)
	}
	defer unmap()
	b, err := unseal(sealed, keys, tolerant)
	if err != nil {
		if errors.Is(err, crypt.ErrNoKey) {
			if tolerant {
				return &segBytes{release: func() error { return nil }, size: st.Size(), sealed: true}, nil
			}
			err = fmt.Errorf("%w: its records cannot be read (repair drops the file)", ErrKeyDestroyed)
		}
		var ce *CorruptionError
		if errors.As(err, &ce) || errors.Is(err, ErrVersion) && !tolerant {
			return nil, err
		}
		return nil, &CorruptionError{File: path, Err: err}
	}
	b.size = st.Size()
	return b, nil
}

func unseal(file []byte, keys *crypt.Keys, tolerant bool) (*segBytes, error) {
	size := int64(len(file))
	h, err := readSealedHeader(bytes.NewReader(file), size)
	if err != nil {
		return nil, err
	}
	s, err := keys.SegmentSealer(h.gen, h.file, h.ids)
	if err != nil {
		return nil, err
	}
	chunk := int64(1) << h.shift
	sealedChunk := chunk + crypt.Overhead
	body := size - int64(h.len)
	n := (body + sealedChunk - 1) / sealedChunk
	lastLen := body - (n-1)*sealedChunk
	if n == 0 || lastLen <= crypt.Overhead {
		return nil, fmt.Errorf("sealed body of %d bytes does not end with a chunk", body)
	}
	plain := (n-1)*chunk + lastLen - crypt.Overhead
	img, err := mmap.MapRegion(nil, int(plain), mmap.RDWR, mmap.ANON, 0)
	if err != nil {
		return nil, fmt.Errorf("engine: memory for a sealed segment of %d bytes: %w", plain, err)
	}
	// Best effort: where the OS allows (RLIMIT_MEMLOCK), the plaintext
	// never reaches swap.
	locked := img.Lock() == nil
	release := func() error {
		// No clear: unmapped pages go back to the kernel, which zeroes
		// them before anyone gets them again.
		if locked {
			_ = img.Unlock()
		}
		return img.Unmap()
	}
	var (
		next    atomic.Int64
		mu      sync.Mutex
		bad     []int
		failure error
		wg      sync.WaitGroup
	)
	workers := min(runtime.GOMAXPROCS(0), int(n))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				off := int64(h.len) + i*sealedChunk
				ln := min(sealedChunk, size-off)
				lo, hi := i*chunk, min((i+1)*chunk, plain)
				out, oerr := s.Open(img[lo:lo:hi], sealedChunkAAD(h.file, uint64(i), i == n-1, h.hash), file[off:off+ln])
				if oerr == nil && int64(len(out)) == hi-lo {
					continue
				}
				if tolerant {
					clear(img[lo:hi])
					mu.Lock()
					bad = append(bad, int(i))
					mu.Unlock()
					continue
				}
				mu.Lock()
				if failure == nil {
					failure = fmt.Errorf("sealed chunk %d (bytes %d to %d) failed authentication", i, off, off+ln)
				}
				mu.Unlock()
				return
			}
		}()
	}
	wg.Wait()
	if failure != nil {
		_ = release()
		return nil, failure
	}
	return &segBytes{data: img, release: release, ids: h.ids, gen: h.gen, sealed: true, bad: bad}, nil
}

// sessionsOf lists the distinct values of the namespace field among the
// records of m, dead ones included (their IDs and vectors are written).
func (m *memtable) sessionsOf(nsField string) []string {
	if nsField == "" {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for i := range m.recs {
		if v, ok := m.recs[i].rec.Meta[nsField]; ok && v.kind == KindString && !seen[v.s] {
			seen[v.s] = true
			out = append(out, v.s)
		}
	}
	return out
}

// writeMemtableSegment writes every node of m (dead ones included: the
// caller records them as deleted) as segment file sw.file in dir, sealed
// when fsys is an encrypted store's, and returns its size on disk.
func writeMemtableSegment(fsys FS, dir string, cfg CollectionConfig, m *memtable, nsField string, sw segWrite, bytesPerSec int64) (int64, error) {
	return writeSegmentFileLimited(fsys, dir, segName(sw.file), buildSections(cfg, m, nsField, sw), bytesPerSec, m.sessionsOf(nsField))
}

// segNameNumber is the file number of a segment file name (0 if none).
func segNameNumber(name string) uint64 {
	n, _ := segFileNumber(strings.TrimSuffix(name, ".tmp"))
	return n
}

// listsKey reports whether a sealed segment was sealed with key id.
func (s *segFile) listsKey(id [crypt.IDSize]byte) bool { return slices.Contains(s.keyIDs, id) }
