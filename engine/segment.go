package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/keyword"
	"github.com/klauspost/compress/zstd"
)

// textBlockSize is the uncompressed size at which a text block is closed:
// a search materializes k texts from k different blocks, so a block must
// decompress in a couple of microseconds; a few records per block still
// let zstd share their vocabulary. (Texts are a small part of a record
// next to a 1024-d vector: 4 KiB float32 + 1 KiB int8.)
const textBlockSize = 2 << 10

// segment is an open, immutable segment file plus the mutable deleted set
// the manifest keeps for it.
type segment struct {
	file uint64
	sf   *segFile
	n    int
	cfg  CollectionConfig
	view *hnsw.View

	// The sections, parsed once at open.
	hdr   segHeader // what the info section says
	ids   idSection
	text  textSection
	times timeSection
	cols  []column    // version 2 on: metadata columns
	rows  *rowSection // version 1: metadata rows
	sums  *sumSection // version 3 on: record checksums

	kwOnce  sync.Once
	kw      *keyword.Segment
	kwErr   error
	nsOnce  sync.Once
	ns      map[string][]uint32
	nsField string
	nsErr   error

	// verified[k] runs once, at the first use of section k after open:
	// nothing is answered from a section whose checksum was not verified.
	verified  [secLastKnown + 1]sync.Once
	verifyErr [secLastKnown + 1]error
	vecOnce   sync.Once // the vectors alone (hnsw View.VerifyVectors)
	vecErr    error

	deleted []uint64 // bitset over nodes; nil while none
	ndel    int
	sets    sessionSets // sessions' live nodes, for filtered searches

	cacheMu sync.Mutex
	cache   map[uint64][]byte // decompressed text blocks
}

func segName(file uint64) string { return fmt.Sprintf("%08d.seg", file) }

// isSegName reports whether name is a segment file name segName writes.
func isSegName(name string) bool {
	num, ok := strings.CutSuffix(name, ".seg")
	if len(num) < 8 || !ok {
		return false
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

var le = binary.LittleEndian

// writeVersion is the version flush, compaction and repair write:
// segVersion, except in tests of reading and upgrading older files.
var writeVersion uint32 = segVersion

var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	// Single-segment frames carry the content size, so decoding allocates
	// once.
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1),
		zstd.WithSingleSegment(true))
	return e
})

var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(4*MaxTextLen))
	return d
})

// openSegment maps a segment file and checks the sizes of its sections
// against the record count (no full read unless verify).
func openSegment(fsys FS, path string, file uint64, cfg CollectionConfig, count uint32, verify bool) (*segment, error) {
	sf, err := mapSegFile(fsys, path)
	if err != nil {
		return nil, err
	}
	s := &segment{file: file, sf: sf, cfg: cfg}
	if err := s.init(count, verify); err != nil {
		sf.close()
		var ce *CorruptionError
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, &CorruptionError{File: path, Err: err}
	}
	return s, nil
}

func (s *segment) init(count uint32, verify bool) error {
	if s.sf.chunks == nil { // segFiles built in memory by tests
		if err := s.sf.parseChunks(); err != nil {
			return err
		}
	}
	if verify {
		if err := s.sf.verify(); err != nil {
			return err
		}
	}
	secs := s.sf.sections
	version := s.sf.version()
	if err := checkSectionSet(version, secs); err != nil {
		return err
	}
	h, err := parseInfo(secs[secInfo], version)
	if err != nil {
		return err
	}
	if h.cfg != s.cfg || h.count != count {
		return fmt.Errorf("segment describes %q dim %d %v fingerprint %q n=%d; manifest says %q dim %d %v fingerprint %q n=%d",
			h.cfg.Name, h.cfg.Dim, h.cfg.Metric, h.cfg.Fingerprint, h.count, s.cfg.Name, s.cfg.Dim, s.cfg.Metric, s.cfg.Fingerprint, count)
	}
	if version >= segVersionV3 && h.file != s.file {
		return fmt.Errorf("file was written as %s", segName(h.file))
	}
	if version < segVersionV3 {
		h.file = s.file
	}
	h.path, h.size = s.sf.path, s.sf.size()
	s.hdr = h
	s.n = int(h.count)
	open := hnsw.OpenViewUnverified // reads the header only; Check verifies
	if verify {
		open = hnsw.OpenView
	}
	view, err := open(secs[secGraph])
	if err != nil {
		return fmt.Errorf("graph section: %w", err)
	}
	if view.Len() != s.n || view.Dim() != s.cfg.Dim || view.Metric() != s.cfg.Metric {
		return fmt.Errorf("graph holds %d nodes of dim %d, want %d of dim %d", view.Len(), view.Dim(), s.n, s.cfg.Dim)
	}
	if s.sf.chunks != nil {
		// Version 4: each search checks the chunks of the graph it read
		// (hnsw.View.SetReadVerifier) instead of the whole section first.
		base := s.graphOffset()
		sf := s.sf
		view.SetReadVerifier(func(off, n uint64) error { return sf.verifyRange(base+off, n) })
		// Rescoring reads vectors with pread, checked chunk by chunk,
		// so they stay out of the process's resident memory.
		view.SetVectorReader(func(off uint64, dst []byte) error { return sf.readChecked(base+off, dst) })
	}
	s.view = view
	if s.ids, err = parseIDs(secs[secIDs], s.n); err != nil {
		return err
	}
	if version >= segVersionV3 && s.ids.live != uint64(s.n-len(h.dead)) {
		return fmt.Errorf("id section lists %d live nodes, info %d of %d dead", s.ids.live, len(h.dead), s.n)
	}
	if version == segVersionV1 {
		if s.rows, err = parseRows(secs[secMeta], s.n); err != nil {
			return err
		}
	} else if s.cols, err = parseColumns(secs[secColumns], s.n); err != nil {
		return fmt.Errorf("column section: %w", err)
	}
	if s.times, err = parseTimes(secs[secTimes], s.n); err != nil {
		return err
	}
	if s.text, err = parseTexts(secs[secText], s.n); err != nil {
		return err
	}
	if version >= segVersionV3 {
		sums, err := parseSums(secs[secSums], s.n)
		if err != nil {
			return err
		}
		s.sums = &sums
	}
	return nil
}

// recordSections are what reading a record without its vector needs; a
// vector search and a record's vector also need secGraph.
var recordSections = []sectionKind{secInfo, secIDs, secMeta, secText, secTimes, secColumns}

// need verifies the checksum of each section kind (absent ones are
// skipped) the first time it is asked for, and returns a *CorruptionError
// for a mismatch, every time it is asked for again.
func (s *segment) need(kinds ...sectionKind) error {
	for _, k := range kinds {
		if int(k) >= len(s.verified) || k == secGraph && s.sf.chunks != nil {
			continue // version 4: the graph's reads are verified chunk by chunk
		}
		s.verified[k].Do(func() { s.verifyErr[k] = s.sf.verifySection(k) })
		if err := s.verifyErr[k]; err != nil {
			return err
		}
	}
	return nil
}

func (k sectionKind) String() string {
	names := [...]string{"", "info", "graph", "ids", "metadata", "text", "times", "keyword", "namespace", "columns", "sums", "chunks"}
	if int(k) < len(names) && k > 0 {
		return names[k]
	}
	return fmt.Sprintf("unknown-%d", uint32(k))
}

// u64at reads the i-th u64 after a base offset, 0 when out of range.
func u64at(b []byte, base, i uint64) uint64 {
	off := base + 8*i
	if off+8 > uint64(len(b)) || off < base {
		return 0
	}
	return le.Uint64(b[off:])
}

// slice returns b[lo:hi] or nil when the range is invalid (damaged bytes).
func slice(b []byte, lo, hi uint64) []byte {
	if lo > hi || hi > uint64(len(b)) {
		return nil
	}
	return b[lo:hi]
}

func (s *segment) idBytes(node uint32) []byte { return s.ids.id(node) }

func (s *segment) id(node uint32) string { return string(s.idBytes(node)) }

// find binary-searches the sorted id table for a live node with that ID.
func (s *segment) find(id string) (uint32, bool) {
	live := int(s.ids.live)
	i := sort.Search(live, func(i int) bool {
		node := s.ids.sortedAt(i)
		return node >= uint32(s.n) || string(s.idBytes(node)) >= id
	})
	if i < live {
		if node := s.ids.sortedAt(i); node < uint32(s.n) && string(s.idBytes(node)) == id && !s.isDeleted(node) {
			return node, true
		}
	}
	return 0, false
}

func (s *segment) getter(node uint32) getter {
	if s.rows == nil {
		return func(field string) (Value, bool) { return colGet(s.cols, node, field) }
	}
	b := s.rows.row(node)
	return func(field string) (Value, bool) { return lookupMeta(b, field) }
}

// accessAt returns node's access statistics as the file holds them.
func (s *segment) accessAt(node uint32) access {
	return access{count: at64(s.times.count, node), last: int64(at64(s.times.lastAccess, node))}
}

func (s *segment) textOf(node uint32) (string, error) {
	blk, off, ln := s.text.where(node)
	if ln == 0 {
		return "", nil
	}
	comp := s.text.block(blk)
	if comp == nil {
		return "", errShort
	}
	raw, err := s.block(blk, comp)
	if err != nil {
		return "", err
	}
	t := slice(raw, off, off+ln)
	if t == nil {
		return "", errShort
	}
	return string(t), nil
}

// blockCacheSize bounds the decompressed text blocks a segment keeps:
// hits of one search often share blocks, and Get of recent hits too.
const blockCacheSize = 64

// block returns text block blk decompressed, from the cache when present.
func (s *segment) block(blk uint64, comp []byte) ([]byte, error) {
	s.cacheMu.Lock()
	raw, ok := s.cache[blk]
	s.cacheMu.Unlock()
	if ok {
		return raw, nil
	}
	// A sized destination halves the decode time of a small block.
	raw, err := zstdDecoder().DecodeAll(comp, make([]byte, 0, 2*textBlockSize))
	if err != nil {
		return nil, err
	}
	s.cacheMu.Lock()
	if s.cache == nil {
		s.cache = make(map[uint64][]byte, blockCacheSize)
	}
	if len(s.cache) >= blockCacheSize {
		for k := range s.cache { // evict an arbitrary block
			delete(s.cache, k)
			break
		}
	}
	s.cache[blk] = raw
	s.cacheMu.Unlock()
	return raw, nil
}

// record assembles node's record; access stats come from ov when set.
func (s *segment) record(node uint32, ov map[string]access, withVec, withText bool) (Record, error) {
	return s.recordInto(node, ov, withVec, withText, nil)
}

// recordInto is record with the vector copied into vec's array when it
// has room (a merge reuses one array per record in flight).
func (s *segment) recordInto(node uint32, ov map[string]access, withVec, withText bool, vec []float32) (Record, error) {
	r := Record{ID: s.id(node)}
	if withText {
		text, err := s.textOf(node)
		if err != nil {
			return Record{}, &CorruptionError{File: s.sf.path, Err: fmt.Errorf("text of node %d: %v", node, err)}
		}
		r.Text = text
	}
	if s.rows == nil {
		m, err := colMeta(s.cols, node)
		if err != nil {
			return Record{}, &CorruptionError{File: s.sf.path, Err: fmt.Errorf("metadata of node %d: %v", node, err)}
		}
		r.Meta = m
	} else if mb := s.rows.row(node); len(mb) > 0 {
		d := dec{b: mb}
		r.Meta = readMeta(&d)
		if d.err != nil {
			return Record{}, &CorruptionError{File: s.sf.path, Err: fmt.Errorf("metadata of node %d: %v", node, d.err)}
		}
	}
	r.Created = fromUnixNano(int64(at64(s.times.created, node)))
	r.Updated = fromUnixNano(int64(at64(s.times.updated, node)))
	r.LastAccess = fromUnixNano(int64(at64(s.times.lastAccess, node)))
	r.AccessCount = at64(s.times.count, node)
	if a, ok := ov[r.ID]; ok {
		r.AccessCount, r.LastAccess = a.count, fromUnixNano(a.last)
	}
	if withVec {
		v, err := s.view.CheckedVector(node)
		if err != nil {
			return r, err
		}
		r.Vector = append(vec[:0], v...)
	}
	return r, nil
}

func (s *segment) isDeleted(node uint32) bool {
	w := int(node >> 6)
	return w < len(s.deleted) && s.deleted[w]&(1<<(node&63)) != 0
}

func (s *segment) markDeleted(node uint32) {
	if s.deleted == nil {
		s.deleted = make([]uint64, (s.n+63)/64)
	}
	w := int(node >> 6)
	if w < len(s.deleted) && s.deleted[w]&(1<<(node&63)) == 0 {
		s.deleted[w] |= 1 << (node & 63)
		s.ndel++
	}
}

func (s *segment) deletedList() []uint32 {
	out := make([]uint32, 0, s.ndel)
	for w, word := range s.deleted {
		for word != 0 {
			b := uint32(w*64) + uint32(bits.TrailingZeros64(word))
			out = append(out, b)
			word &= word - 1
		}
	}
	return out
}

func (s *segment) live() int { return s.n - s.ndel }

// keyword opens the BM25 section on first use (it checksums the section).
func (s *segment) keyword() (*keyword.Segment, error) {
	s.kwOnce.Do(func() {
		if s.kwErr = s.need(secKeyword); s.kwErr != nil {
			return
		}
		s.kw, s.kwErr = keyword.Open(s.sf.sections[secKeyword])
		if s.kwErr != nil {
			s.kwErr = &CorruptionError{File: s.sf.path, Err: s.kwErr}
		}
	})
	return s.kw, s.kwErr
}

// namespace returns the nodes whose namespace field equals v (parsed on
// first use).
func (s *segment) namespace(field, v string) ([]uint32, error) {
	s.nsOnce.Do(func() {
		if s.nsErr = s.need(secNamespace); s.nsErr != nil {
			return
		}
		d := dec{b: s.sf.sections[secNamespace]}
		f := d.str()
		nv := d.count(s.n, 2)
		s.ns = make(map[string][]uint32, nv)
		for range nv {
			k := d.str()
			c := d.count(s.n, 1)
			list := make([]uint32, c)
			prev := uint64(0)
			for i := range list {
				prev += d.uvarint()
				if prev >= uint64(s.n) {
					d.fail()
				}
				list[i] = uint32(prev)
			}
			s.ns[k] = list
		}
		if d.err != nil {
			s.nsErr = &CorruptionError{File: s.sf.path, Err: fmt.Errorf("namespace section: %v", d.err)}
		}
		s.nsField = f
	})
	if s.nsErr != nil {
		return nil, s.nsErr
	}
	if s.nsField != field {
		return nil, errNoNamespace // written for another field
	}
	return s.ns[v], nil
}

var errNoNamespace = errors.New("no namespace postings for this field")

// check verifies checksums and the structure of every section, then that
// the graph reaches every live node (last, so an *UnreachableError means
// everything else passed).
func (s *segment) check() error {
	fail := func(format string, a ...any) error {
		return &CorruptionError{File: s.sf.path, Err: fmt.Errorf(format, a...)}
	}
	if err := s.sf.verify(); err != nil {
		return err
	}
	if err := s.view.Verify(); err != nil {
		return fail("graph section: %v", err)
	}
	if _, err := s.keyword(); err != nil {
		return err
	}
	if kw, _ := s.keyword(); kw != nil {
		if err := kw.Check(); err != nil {
			return fail("keyword section: %v", err)
		}
	}
	prev := ""
	for i := range int(s.ids.live) {
		node := s.ids.sortedAt(i)
		if node >= uint32(s.n) {
			return fail("sorted id %d names node %d of %d", i, node, s.n)
		}
		id := s.idBytes(node)
		if i > 0 && string(id) <= prev {
			return fail("sorted ids out of order at %d", i)
		}
		prev = string(id)
		if err := validateID(prev); err != nil {
			return fail("node %d: %v", node, err)
		}
	}
	if s.sums != nil && !slices.Equal(s.ids.deadNodes(), s.hdr.dead) {
		return fail("the id table's dead nodes differ from the info section's")
	}
	for node := uint32(0); node < uint32(s.n); node++ {
		if s.isDeleted(node) {
			continue
		}
		r, err := s.record(node, nil, s.sums != nil, true)
		if err != nil {
			return err
		}
		if s.sums != nil && recordSum(&r, r.Vector) != s.sums.at(node) {
			return fail("node %d (%q) does not match its record checksum", node, r.ID)
		}
		if v := s.view.Vector(node); len(v) != s.cfg.Dim {
			return fail("node %d has no vector", node)
		}
		for _, x := range s.view.Vector(node) {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fail("node %d vector is not finite", node)
			}
		}
	}
	if err := checkColumns(s.cols, s.n); err != nil {
		return fail("column section: %v", err)
	}
	if _, err := s.namespace("", ""); err != nil && !errors.Is(err, errNoNamespace) {
		return err
	}
	return s.checkReachable()
}

// checkReachable walks the graph (hnsw View.Reach: breadth-first from the
// entry point over every level's lists, as a search descends them) and
// requires every live record's node to be reached (else an
// *UnreachableError) and not to be a graph tombstone (a *CorruptionError):
// a search can then return it. Dead nodes are walked through, as a search
// does.
func (s *segment) checkReachable() error {
	fail := func(format string, a ...any) error {
		return &CorruptionError{File: s.sf.path, Err: fmt.Errorf("graph: "+format, a...)}
	}
	live := s.live()
	if live == 0 {
		return nil
	}
	for node := uint32(0); node < uint32(s.n); node++ {
		if !s.isDeleted(node) && s.view.Deleted(node) {
			return fail("live node %d is a tombstone (never returned by search)", node)
		}
	}
	seen := s.view.Reach()
	if seen == nil {
		return fail("no entry point with %d live nodes", live)
	}
	unreached, first := 0, uint32(0)
	for node := uint32(0); node < uint32(s.n); node++ {
		if !s.isDeleted(node) && !seen.Allow(node) {
			if unreached == 0 {
				first = node
			}
			unreached++
		}
	}
	if unreached > 0 {
		return &UnreachableError{File: s.sf.path, Unreachable: unreached, Live: live, First: first}
	}
	return nil
}

func (s *segment) close() error { return s.sf.close() }

// graphOffset is where the graph section starts in the file.
func (s *segment) graphOffset() uint64 {
	for _, e := range s.sf.entries {
		if e.kind == secGraph {
			return e.off
		}
	}
	return 0
}

// matcher returns f evaluated per node of s (deleted nodes not excluded):
// compiled against the columns of a version 2 segment, through the
// encoded rows of a version 1 segment.
func (s *segment) matcher(f *Filter) func(node uint32) bool {
	switch {
	case f == nil:
		return func(uint32) bool { return true }
	case s.rows == nil:
		return colMatcher(f, s.cols)
	}
	return func(node uint32) bool { return f.match(s.getter(node)) }
}

// verifiedRecord is record with vector and text, its primary data proven
// intact first: by its record checksum (version 3), which does not trust
// the graph section's checksum (the codes and lists beside the vectors are
// derived, and compaction rebuilds them), or, in older files, by the
// checksums of the primary sections and of the vectors. Access stats come
// from ov when set. The vector is copied into vec's array when it has
// room.
func (s *segment) verifiedRecord(node uint32, ov map[string]access, vec []float32) (Record, error) {
	if s.sums == nil || s.need(secSums) != nil { // no (intact) record checksums
		if err := s.need(recordSections...); err != nil {
			return Record{}, err
		}
		s.vecOnce.Do(func() {
			if err := s.view.VerifyVectors(); err != nil {
				s.vecErr = &CorruptionError{File: s.sf.path, Err: fmt.Errorf("graph section: %v", err)}
			}
		})
		if s.vecErr != nil {
			return Record{}, s.vecErr
		}
		return s.recordInto(node, ov, true, true, vec)
	}
	r, err := s.recordInto(node, nil, true, true, vec)
	if err != nil {
		return Record{}, err
	}
	if recordSum(&r, r.Vector) != s.sums.at(node) {
		return Record{}, &CorruptionError{File: s.sf.path, Err: fmt.Errorf("node %d (%q) does not match its record checksum", node, r.ID)}
	}
	if a, ok := ov[r.ID]; ok {
		r.AccessCount, r.LastAccess = a.count, fromUnixNano(a.last)
	}
	return r, nil
}
