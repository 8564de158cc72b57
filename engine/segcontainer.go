package engine

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/engramdb/engram/internal/crypt"
)

// The segment container: a fixed header, sections at 64-byte aligned
// offsets, then a section table and a trailer that locates it. The table
// comes last so a writer streams each section once, checksumming as it
// goes. Format: docs/format/segment.md.

const (
	segMagic     = "ENGRMSEG"
	segVersion   = 4 // chunk checksums (section 11): verified piece by piece as reads touch them
	segVersionV3 = 3 // self-describing: info with WAL position, record checksums (section 10)
	segVersionV2 = 2 // columnar metadata (section 9); still read, written only by tests
	segVersionV1 = 1 // row metadata (section 4); still read, written only by tests
	segAlign     = 64
	segTrailer   = 24 // table offset u64, table length u32, table CRC u32, magic
	segEntrySize = 32
	maxSections  = 64
)

type sectionKind uint32

const (
	secInfo      sectionKind = iota + 1 // collection, dim, metric, count
	secGraph                            // hnsw serialized index (codes, vectors, graph)
	secIDs                              // external ids: offsets, bytes, sorted order
	secMeta                             // encoded metadata per record
	secText                             // zstd-compressed text blocks
	secTimes                            // created, updated, last access, access count
	secKeyword                          // keyword (BM25) serialized index
	secNamespace                        // postings per namespace-field value
	secColumns                          // metadata columns (version 2 on)
	secSums                             // per-record checksums (version 3)
	secChunks                           // a CRC32C per chunk of the file before it (version 4)

	secLastKnown = secChunks
)

// segChunkShift sets the chunk size of version 4 files: 4 KiB, the page
// size. Reads at query time are random and small (a 1024-d node's int8
// code is 1 KiB, its vector 4 KiB, its level-0 list a few hundred bytes),
// so the bytes verified at a first query grow with the chunk size: at 4
// KiB a touched code costs 4 KiB of checksumming, the same page the read
// faults in anyway, where 64 KiB would cost 64 times the code. The price
// is a table of 4 bytes per 4 KiB (0.1% of the file, verified whole at
// open: 1.3 MB for a 1.3 GB file) and a bitmap of one bit per chunk.
// Readers take the shift from the file.
const segChunkShift = 12

// Bounds on a file's chunk shift (512 B to 16 MiB).
const minChunkShift, maxChunkShift = 9, 24

type sectionEntry struct {
	kind sectionKind
	off  uint64
	len  uint64
	crc  uint32
}

// section is one section to write: its kind and a function streaming its
// bytes (which may be large, such as the vectors).
type section struct {
	kind  sectionKind
	write func(w io.Writer) error
}

type countingWriter struct {
	w io.Writer
	h hash.Hash32
	n uint64
}

// chunkWriter passes writes on and, while on, computes the CRC32C of each
// chunk of 1<<shift bytes of them.
type chunkWriter struct {
	w     io.Writer
	on    bool
	shift uint
	fill  uint64 // bytes in the current chunk
	cur   uint32
	crcs  []uint32
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	for q := p[:n]; c.on && len(q) > 0; {
		k := min(uint64(len(q)), 1<<c.shift-c.fill)
		c.cur = crc32.Update(c.cur, castagnoli, q[:k])
		c.fill += k
		q = q[k:]
		if c.fill == 1<<c.shift {
			c.crcs = append(c.crcs, c.cur)
			c.cur, c.fill = 0, 0
		}
	}
	return n, err
}

// finish closes the last, partial chunk and stops checksumming.
func (c *chunkWriter) finish() {
	if c.fill > 0 {
		c.crcs = append(c.crcs, c.cur)
	}
	c.on = false
}

// chunkSection encodes section 11 for the file's first covered bytes.
func chunkSection(shift uint, covered uint64, crcs []uint32) []byte {
	var e enc
	e.u32(uint32(shift))
	e.u32(uint32(len(crcs)))
	e.u64(covered)
	for _, c := range crcs {
		e.u32(c)
	}
	if len(crcs)%2 == 1 {
		e.u32(0)
	}
	return e.b
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.h.Write(p[:n])
	c.n += uint64(n)
	return n, err
}

// writeSegmentFile streams sections into dir/name atomically (see
// writeAtomic) and returns the file's size.
func writeSegmentFile(fsys FS, dir, name string, sections []section) (int64, error) {
	return writeSegmentFileLimited(fsys, dir, name, sections, 0, nil)
}

func streamSegment(f io.Writer, sections []section) (int64, error) {
	chw := &chunkWriter{w: bufio.NewWriterSize(f, 1<<20), shift: segChunkShift}
	bw := io.Writer(chw)
	var off uint64
	pad := func(to uint64) error {
		var zero [segAlign]byte
		for off < to {
			n := min(to-off, segAlign)
			if _, err := bw.Write(zero[:n]); err != nil {
				return err
			}
			off += n
		}
		return nil
	}
	var hdr enc
	hdr.b = append(hdr.b, segMagic...)
	version := sectionsVersion(sections)
	chw.on = version >= segVersion
	hdr.u32(version)
	if _, err := bw.Write(hdr.b); err != nil {
		return 0, err
	}
	off = uint64(len(hdr.b))
	entries := make([]sectionEntry, 0, len(sections))
	for _, s := range sections {
		if err := pad((off + segAlign - 1) / segAlign * segAlign); err != nil {
			return 0, err
		}
		cw := &countingWriter{w: bw, h: crc32.New(castagnoli)}
		write := s.write
		if s.kind == secChunks {
			// The chunk table covers every byte before it (this
			// section's own checksum is in the section table).
			chw.finish()
			b := chunkSection(chw.shift, off, chw.crcs)
			write = func(w io.Writer) error { _, err := w.Write(b); return err }
		}
		if err := write(cw); err != nil {
			return 0, err
		}
		entries = append(entries, sectionEntry{kind: s.kind, off: off, len: cw.n, crc: cw.h.Sum32()})
		off += cw.n
	}
	if err := pad((off + 7) / 8 * 8); err != nil {
		return 0, err
	}
	var t enc
	t.u32(uint32(len(entries)))
	for _, e := range entries {
		t.u32(uint32(e.kind))
		t.u32(0)
		t.u64(e.off)
		t.u64(e.len)
		t.u32(e.crc)
		t.u32(0)
	}
	tableOff := off
	t.u64(tableOff)
	t.u32(uint32(len(t.b) - 8))
	t.u32(crc(t.b[:len(t.b)-12]))
	t.b = append(t.b, segMagic...)
	if _, err := bw.Write(t.b); err != nil {
		return 0, err
	}
	off += uint64(len(t.b))
	return int64(off), chw.w.(*bufio.Writer).Flush()
}

// segFile is a mapped segment file with its section table parsed. Opening
// reads only the trailer and the table; section checksums are verified by
// verify (Check, or Options.VerifyOnOpen).
type segFile struct {
	path     string
	data     []byte         // the mapping (vfs.Map): read-only
	unmap    func() error   // releases data
	file     readerAtCloser // open while mapped: readChecked (nil: read data)
	sections map[sectionKind][]byte
	entries  []sectionEntry
	chunks   *chunkTable // version 4 on; nil before
	// keyIDs are the session keys a sealed file's key derives from (nil:
	// plaintext); diskSize is the file's size on disk (len(data) unless
	// sealed).
	keyIDs   [][crypt.IDSize]byte
	keyGen   uint32 // the generation of the store key it was sealed with
	diskSize int64
}

// size is the file's size on disk, what manifests record.
func (s *segFile) size() uint64 {
	if s.diskSize > 0 {
		return uint64(s.diskSize)
	}
	return uint64(len(s.data))
}

// chunkTable is a parsed chunk section (kind 11) with the chunks verified
// so far. A chunk is checksummed the first time a read touches it; the
// bitmap is set atomically after a match, so concurrent readers verify a
// chunk once (two racing first readers may both compute it: harmless)
// and a mismatch, never set, is found again by every later read.
type chunkTable struct {
	shift   uint
	covered uint64 // bytes [0, covered) of the file are chunked
	crcs    []byte // count × u32
	ok      []atomic.Uint64
}

func parseChunks(b []byte, fileLen uint64, off uint64) (*chunkTable, error) {
	if len(b) < 16 {
		return nil, errors.New("chunk section too short")
	}
	shift, count, covered := le.Uint32(b), uint64(le.Uint32(b[4:])), le.Uint64(b[8:])
	if shift < minChunkShift || shift > maxChunkShift {
		return nil, fmt.Errorf("chunk size 1<<%d out of range", shift)
	}
	if covered != off || covered > fileLen || count != (covered+1<<shift-1)>>shift || uint64(len(b)) != 16+4*(count+count%2) {
		return nil, fmt.Errorf("chunk section of %d bytes: %d chunks of 1<<%d covering %d bytes, section at %d", len(b), count, shift, covered, off)
	}
	return &chunkTable{shift: uint(shift), covered: covered, crcs: b[16 : 16+4*count], ok: make([]atomic.Uint64, (count+63)/64)}, nil
}

// verified reports whether chunks first to last have all been checked.
func (t *chunkTable) verified(first, last uint64) bool {
	for i := first; i <= last; i++ {
		if t.ok[i>>6].Load()&(1<<(i&63)) == 0 {
			return false
		}
	}
	return true
}

// verifyRange checks the chunks holding bytes [off, off+n) of the file
// (for version 4 on; earlier files have no chunks, and their callers
// verify whole sections instead). Bytes past the chunked part are not
// checked here: the sections' and the table's own checksums cover them.
func (s *segFile) verifyRange(off, n uint64) error {
	t := s.chunks
	if t == nil || n == 0 || off >= t.covered {
		return nil
	}
	last := (min(off+n, t.covered) - 1) >> t.shift
	for i := off >> t.shift; i <= last; i++ {
		w, bit := &t.ok[i>>6], uint64(1)<<(i&63)
		if w.Load()&bit != 0 {
			continue
		}
		lo := i << t.shift
		hi := min(lo+1<<t.shift, t.covered)
		if crc32.Checksum(s.data[lo:hi], castagnoli) != le.Uint32(t.crcs[4*i:]) {
			return &CorruptionError{File: s.path, Err: fmt.Errorf("chunk %d (bytes %d to %d) checksum mismatch", i, lo, hi)}
		}
		w.Or(bit)
	}
	return nil
}

// mapSegFile maps the segment file at path through fsys (a sealed one is
// decrypted into memory: sealedseg.go) and parses its table.
func mapSegFile(fsys FS, path string) (*segFile, error) {
	b, err := readSegBytes(fsys, path, false)
	if err != nil {
		return nil, err
	}
	if len(b.data) < 12+segTrailer+4 {
		b.close()
		return nil, &CorruptionError{File: path, Err: fmt.Errorf("file of %d bytes is too short", len(b.data))}
	}
	// A mapped file stays open for readChecked (rescoring's vector
	// reads); an image is read in place.
	sf := &segFile{path: path, data: b.data, unmap: b.release, keyIDs: b.ids, keyGen: b.gen, diskSize: b.size}
	if b.file != nil {
		sf.file = b.file
	}
	if err := sf.parse(); err != nil {
		_ = sf.close()
		return nil, &CorruptionError{File: path, Err: err}
	}
	return sf, nil
}

// parse validates the header, trailer and table of b; every offset is
// checked against the file size before use.
func parseSegment(b []byte) (map[sectionKind][]byte, []sectionEntry, error) {
	if len(b) < 12+segTrailer+4 || string(b[:8]) != segMagic {
		return nil, nil, errors.New("bad segment magic")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); requiredSections[v] == nil {
		return nil, nil, fmt.Errorf("%w: segment version %d, this build reads %d to %d", ErrVersion, v, segVersionV1, segVersion)
	}
	return parseContainer(b)
}

// parseContainer is parseSegment without the magic and version checks
// (Repair salvages a file whose version field is what was damaged).
func parseContainer(b []byte) (map[sectionKind][]byte, []sectionEntry, error) {
	if len(b) < 12+segTrailer+4 {
		return nil, nil, errors.New("file too short")
	}
	tr := b[len(b)-segTrailer:]
	if string(tr[16:]) != segMagic {
		return nil, nil, errors.New("bad trailer magic (torn or truncated file)")
	}
	tableOff := binary.LittleEndian.Uint64(tr)
	tableLen := uint64(binary.LittleEndian.Uint32(tr[8:]))
	tableCRC := binary.LittleEndian.Uint32(tr[12:])
	end := uint64(len(b) - segTrailer)
	if tableOff < 12 || tableOff > end || end-tableOff < 4 || end-tableOff > 4+maxSections*segEntrySize {
		return nil, nil, fmt.Errorf("section table at %d out of range", tableOff)
	}
	table := b[tableOff:end]
	if uint64(len(table)) != tableLen || crc(table) != tableCRC {
		return nil, nil, errors.New("section table checksum mismatch")
	}
	n := binary.LittleEndian.Uint32(table)
	if uint64(n)*segEntrySize != uint64(len(table)-4) {
		return nil, nil, fmt.Errorf("section table of %d bytes does not hold %d entries", len(table), n)
	}
	secs := make(map[sectionKind][]byte, n)
	entries := make([]sectionEntry, n)
	for i := range entries {
		p := table[4+i*segEntrySize:]
		e := sectionEntry{
			kind: sectionKind(binary.LittleEndian.Uint32(p)),
			off:  binary.LittleEndian.Uint64(p[8:]),
			len:  binary.LittleEndian.Uint64(p[16:]),
			crc:  binary.LittleEndian.Uint32(p[24:]),
		}
		if e.off < 12 || e.off%segAlign != 0 || e.off > tableOff || e.len > tableOff-e.off {
			return nil, nil, fmt.Errorf("section %d (kind %d) at %d+%d out of range", i, e.kind, e.off, e.len)
		}
		if _, dup := secs[e.kind]; dup {
			return nil, nil, fmt.Errorf("section kind %d appears twice", e.kind)
		}
		secs[e.kind] = b[e.off : e.off+e.len : e.off+e.len]
		entries[i] = e
	}
	return secs, entries, nil
}

func (s *segFile) parse() error {
	secs, entries, err := parseSegment(s.data)
	if err != nil {
		return err
	}
	s.sections, s.entries = secs, entries
	return s.parseChunks()
}

// parseChunks verifies and parses the chunk section of a version 4 file
// (small: 4 bytes per chunk), so that every later read can be verified.
func (s *segFile) parseChunks() error {
	if s.version() < segVersion {
		return nil
	}
	for _, e := range s.entries {
		if e.kind != secChunks {
			continue
		}
		if err := s.verifySection(secChunks); err != nil {
			return err
		}
		t, err := parseChunks(s.sections[secChunks], uint64(len(s.data)), e.off)
		if err != nil {
			return err
		}
		s.chunks = t
		return nil
	}
	return errors.New("version 4 segment without its chunk section")
}

// sectionsVersion is the format version of a file holding sections: the
// first whose required sections they are (tests write older versions).
func sectionsVersion(sections []section) uint32 {
	has := map[sectionKind]bool{}
	for _, s := range sections {
		has[s.kind] = true
	}
	switch {
	case has[secMeta]:
		return segVersionV1
	case !has[secSums]:
		return segVersionV2
	case !has[secChunks]:
		return segVersionV3
	}
	return segVersion
}

// version is the file's format version (validated by parse).
func (s *segFile) version() uint32 { return binary.LittleEndian.Uint32(s.data[8:]) }

// verifySection checks the CRC32C of section k (absent: nothing to check).
func (s *segFile) verifySection(k sectionKind) error {
	for _, e := range s.entries {
		if e.kind == k && crcParallel(s.sections[k], parallelCRCChunk) != e.crc {
			return &CorruptionError{File: s.path, Err: fmt.Errorf("section %s (kind %d) checksum mismatch", k, k)}
		}
	}
	return nil
}

// verify checks every section's CRC32C and that every byte outside the
// sections, the table and the trailer is zero: a full read of the file, so
// a change to any byte of it is found (the header and the trailer are
// validated by parse, the table by its checksum).
func (s *segFile) verify() error {
	for _, e := range s.entries {
		if err := s.verifySection(e.kind); err != nil {
			return err
		}
	}
	if err := checkGaps(s.data, s.entries); err != nil {
		return &CorruptionError{File: s.path, Err: err}
	}
	if s.chunks != nil {
		return s.verifyRange(0, s.chunks.covered)
	}
	return nil
}

// checkGaps reports the first non-zero byte of b outside the header's
// magic and version, the sections and the table (the header's rest and
// the alignment padding, which no checksum covers in versions 1 to 3), and
// sections that overlap (a writer never lays them out so).
func checkGaps(b []byte, entries []sectionEntry) error {
	if len(b) < 12+segTrailer {
		return errors.New("file too short")
	}
	byOff := slices.Clone(entries)
	slices.SortFunc(byOff, func(x, y sectionEntry) int { return cmp.Compare(x.off, y.off) })
	tableOff := binary.LittleEndian.Uint64(b[len(b)-segTrailer:])
	if tableOff > uint64(len(b)) {
		return fmt.Errorf("section table at %d out of range", tableOff)
	}
	zero := func(from, to uint64) error {
		for i := from; i < to; i++ {
			if b[i] != 0 {
				return fmt.Errorf("byte %d of the padding is %#x, not 0", i, b[i])
			}
		}
		return nil
	}
	pos := uint64(12)
	for _, e := range byOff {
		if e.off < pos {
			return fmt.Errorf("section %s at %d overlaps the bytes before %d", e.kind, e.off, pos)
		}
		if err := zero(pos, e.off); err != nil {
			return err
		}
		pos = e.off + e.len
	}
	if tableOff < pos {
		return fmt.Errorf("section table at %d overlaps the sections ending at %d", tableOff, pos)
	}
	return zero(pos, tableOff)
}

func (s *segFile) close() error {
	var err error
	if s.file != nil {
		err = s.file.Close()
		s.file = nil
	}
	if s.data == nil {
		return err
	}
	if uerr := s.unmap(); err == nil {
		err = uerr
	}
	s.data, s.unmap = nil, nil
	return err
}

// readerAtCloser is what readChecked needs of the segment's file.
type readerAtCloser interface {
	io.ReaderAt
	io.Closer
}

// readBufs holds the buffers of readChecked.
var readBufs = sync.Pool{New: func() any { return new([]byte) }}

// readChecked copies bytes [off, off+len(dst)) of the file into dst with
// ReadAt (pread), never through the mapping, and checks the chunks they
// lie in (version 4 on) against the chunk table from the bytes it read.
// Rescoring reads vectors this way: through the mapping, each scattered
// read would map a whole folio of the page cache into the process (up to
// megabytes on current kernels), and after a few hundred queries the
// entire vectors section would count as resident.
func (s *segFile) readChecked(off uint64, dst []byte) error {
	n := uint64(len(dst))
	if off > uint64(len(s.data)) || n > uint64(len(s.data))-off {
		return &CorruptionError{File: s.path, Err: fmt.Errorf("read of %d bytes at %d past the end (%d)", n, off, len(s.data))}
	}
	if s.file == nil { // a segment built in memory by tests
		copy(dst, s.data[off:off+n])
		return s.verifyRange(off, n)
	}
	t := s.chunks
	if t == nil || off+n > t.covered {
		// No chunks (before version 4: the whole section was verified
		// before the first search) or past the chunked part (never for
		// the graph section).
		if t != nil {
			if err := s.verifyRange(off, n); err != nil {
				return err
			}
		}
		return s.readAt(dst, off)
	}
	lo := off >> t.shift << t.shift
	hi := min(((off+n-1)>>t.shift+1)<<t.shift, t.covered)
	if t.verified(lo>>t.shift, (hi-1)>>t.shift) {
		// Every chunk was checked by an earlier read: read just the
		// bytes asked for (a 4 KiB vector straddles two chunks, and
		// reading both whole doubled what rescoring copied).
		return s.readAt(dst, off)
	}
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	if uint64(cap(*bp)) < hi-lo {
		*bp = make([]byte, hi-lo)
	}
	buf := (*bp)[:hi-lo]
	if err := s.readAt(buf, lo); err != nil {
		return err
	}
	for i := lo >> t.shift; i<<t.shift < hi; i++ {
		w, bit := &t.ok[i>>6], uint64(1)<<(i&63)
		if w.Load()&bit != 0 {
			continue
		}
		clo := i<<t.shift - lo
		chi := min(clo+1<<t.shift, hi-lo)
		if crc32.Checksum(buf[clo:chi], castagnoli) != le.Uint32(t.crcs[4*i:]) {
			return &CorruptionError{File: s.path, Err: fmt.Errorf("chunk %d (bytes %d to %d) checksum mismatch", i, lo+clo, lo+chi)}
		}
		w.Or(bit)
	}
	copy(dst, buf[off-lo:])
	return nil
}

func (s *segFile) readAt(dst []byte, off uint64) error {
	if _, err := s.file.ReadAt(dst, int64(off)); err != nil {
		return fmt.Errorf("engine: read %s: %w", s.path, err)
	}
	return nil
}
