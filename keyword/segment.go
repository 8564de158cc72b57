package keyword

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	mathbits "math/bits"
	"slices"
	"strings"
)

// FormatVersion is the version of the serialized index (docs/format/keyword.md).
//
// Version 3 counts term frequencies and lengths in TokenUnits; version 2 (read
// too) counted whole tokens, and its counts are scaled on reading, so a
// version 2 segment scores exactly as before next to version 3 parts.
const FormatVersion = 3

// formatV2 is the previous version, still read.
const formatV2 = 2

const (
	magic      = "ENGRAMKW"
	headerSize = 48
	docEntry   = 8  // doc u32, length u32
	termEntry  = 12 // term offset u32, postings offset u32, doc freq u32
	crcSize    = 4
	blockSize  = 128 // postings per block
	skipEntry  = 8   // first ordinal u32, block offset u32
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every error Open and Check return for bytes that
// are not a well-formed index.
var ErrCorrupt = errors.New("keyword: corrupt index")

// ErrVersion is wrapped by Open's error for an index written with another
// format or analyzer version; the engine rebuilds such a segment from text.
var ErrVersion = errors.New("keyword: unsupported index version")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// MarshalBinary returns a snapshot of the index in the serialized form that
// Open reads (docs/format/keyword.md). Documents are renumbered nowhere: the
// serialized index answers with the same document numbers.
func (x *Index) MarshalBinary() ([]byte, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()

	docs := make([]uint32, 0, len(x.docLen))
	for d := range x.docLen {
		docs = append(docs, d)
	}
	slices.Sort(docs)
	ordinal := make(map[uint32]uint32, len(docs))
	for i, d := range docs {
		ordinal[d] = uint32(i)
	}
	terms := make([]string, 0, len(x.postings))
	termBytes := 0
	for t := range x.postings {
		terms = append(terms, t)
		termBytes += len(t)
	}
	slices.Sort(terms)

	var post []byte
	table := make([]byte, 0, termEntry*(len(terms)+1))
	var termOff uint64
	for _, t := range terms {
		list := x.postings[t]
		table = binary.LittleEndian.AppendUint32(table, uint32(termOff))
		table = binary.LittleEndian.AppendUint32(table, uint32(len(post)))
		table = binary.LittleEndian.AppendUint32(table, uint32(len(list)))
		post = appendPostings(post, list, ordinal)
		termOff += uint64(len(t))
		if termOff > math.MaxUint32 || len(post) > math.MaxUint32 {
			return nil, errors.New("keyword: index too large to serialize (4 GiB section limit)")
		}
	}
	table = binary.LittleEndian.AppendUint32(table, uint32(termOff))
	table = binary.LittleEndian.AppendUint32(table, uint32(len(post)))
	table = binary.LittleEndian.AppendUint32(table, 0)

	size := headerSize + docEntry*len(docs) + len(table) + termBytes + len(post) + crcSize
	b := make([]byte, 0, size)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, FormatVersion)
	b = binary.LittleEndian.AppendUint32(b, AnalyzerVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(docs)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(terms)))
	b = binary.LittleEndian.AppendUint64(b, uint64(x.totalLen))
	b = binary.LittleEndian.AppendUint64(b, uint64(termBytes))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(post)))
	for _, d := range docs {
		b = binary.LittleEndian.AppendUint32(b, d)
		b = binary.LittleEndian.AppendUint32(b, x.docLen[d])
	}
	b = append(b, table...)
	for _, t := range terms {
		b = append(b, t...)
	}
	b = append(b, post...)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return b, nil
}

// appendPostings encodes one term's list: a skip table for lists longer
// than one block, then the blocks. The first posting of each block holds its
// ordinal itself, the others the gap from the previous one, so a reader can
// start at any block.
func appendPostings(post []byte, list []posting, ordinal map[uint32]uint32) []byte {
	nb := (len(list) + blockSize - 1) / blockSize
	skipAt := len(post)
	post = append(post, make([]byte, skipEntry*(nb-1))...) // filled below
	dataAt := len(post)
	prev := uint32(0)
	for i, p := range list {
		o := ordinal[p.doc]
		if i%blockSize == 0 {
			if b := i / blockSize; b > 0 {
				e := post[skipAt+skipEntry*(b-1):]
				binary.LittleEndian.PutUint32(e, o)
				binary.LittleEndian.PutUint32(e[4:], uint32(len(post)-dataAt))
			}
			post = binary.AppendUvarint(post, uint64(o))
		} else {
			post = binary.AppendUvarint(post, uint64(o-prev))
		}
		post = binary.AppendUvarint(post, uint64(p.tf))
		prev = o
	}
	return post
}

// WriteTo writes MarshalBinary's bytes to w.
func (x *Index) WriteTo(w io.Writer) (int64, error) {
	b, err := x.MarshalBinary()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(b)
	return int64(n), err
}

// Segment is a read-only index over serialized bytes. Lookups binary-search
// the sorted term table and decode only the postings of the terms asked for.
// A Segment is safe for concurrent use.
type Segment struct {
	numDocs, numTerms int
	totalLen          int64  // as stored
	units             uint32 // what a stored count is multiplied by to be in TokenUnits

	docs      []byte // numDocs entries of (doc, length)
	terms     []byte // numTerms+1 entries of (term off, postings off, df)
	termBytes []byte
	post      []byte

	bounds segBounds // bounds of the terms read whole so far (bound.go)
	dense  bool      // document i at ordinal i
}

// Open returns a Segment reading b, which must stay unchanged while the
// Segment is in use (the engine passes a slice of its mmapped segment file).
// Open checks the header, the section sizes and the CRC32C of b; it does not
// decode the term table or the postings. Malformed bytes that pass these
// checks (a forged checksum) make lookups return fewer results, never panic;
// Check validates everything.
func Open(b []byte) (*Segment, error) {
	if len(b) < headerSize+crcSize {
		return nil, corrupt("%d bytes is shorter than a header", len(b))
	}
	if string(b[:8]) != magic {
		return nil, corrupt("bad magic %q", b[:8])
	}
	le := binary.LittleEndian
	v := le.Uint32(b[8:])
	if v != FormatVersion && v != formatV2 {
		return nil, fmt.Errorf("%w: format %d, want %d or %d", ErrVersion, v, formatV2, FormatVersion)
	}
	if v := le.Uint32(b[12:]); v != AnalyzerVersion {
		return nil, fmt.Errorf("%w: analyzer %d, want %d", ErrVersion, v, AnalyzerVersion)
	}
	numDocs, numTerms := uint64(le.Uint32(b[16:])), uint64(le.Uint32(b[20:]))
	totalLen, termBytes, postBytes := le.Uint64(b[24:]), le.Uint64(b[32:]), le.Uint64(b[40:])
	if totalLen > math.MaxInt64 || termBytes > math.MaxUint32 || postBytes > math.MaxUint32 {
		return nil, corrupt("section sizes out of range")
	}
	want := headerSize + docEntry*numDocs + termEntry*(numTerms+1) + termBytes + postBytes + crcSize
	if want != uint64(len(b)) {
		return nil, corrupt("size %d, header implies %d", len(b), want)
	}
	body := b[:len(b)-crcSize]
	if got, sum := crc32.Checksum(body, castagnoli), le.Uint32(b[len(body):]); got != sum {
		return nil, corrupt("checksum %08x, stored %08x", got, sum)
	}
	if v == formatV2 && totalLen > math.MaxInt64/TokenUnits {
		return nil, corrupt("total length out of range")
	}
	s := &Segment{numDocs: int(numDocs), numTerms: int(numTerms), totalLen: int64(totalLen), units: 1}
	if v == formatV2 {
		s.units = TokenUnits
	}
	rest := body[headerSize:]
	s.docs, rest = rest[:docEntry*numDocs], rest[docEntry*numDocs:]
	s.terms, rest = rest[:termEntry*(numTerms+1)], rest[termEntry*(numTerms+1):]
	s.termBytes, s.post = rest[:termBytes], rest[termBytes:]
	// Strictly increasing documents (Check) ending at numDocs-1 are 0, 1,
	// 2, ...: a compacted segment that lost none. A forged table that only
	// looks so gives wrong ordinals, still in range.
	s.dense = numDocs > 0 && binary.LittleEndian.Uint32(s.docs[docEntry*(numDocs-1):]) == uint32(numDocs-1)
	return s, nil
}

// NumDocs implements Part.
func (s *Segment) NumDocs() int { return s.numDocs }

// TotalLen implements Part.
func (s *Segment) TotalLen() int64 { return s.totalLen * int64(s.units) }

// NumTerms returns the number of distinct terms.
func (s *Segment) NumTerms() int { return s.numTerms }

func (s *Segment) entry(i int) (termOff, postOff, df uint32) {
	e := s.terms[termEntry*i:]
	le := binary.LittleEndian
	return le.Uint32(e), le.Uint32(e[4:]), le.Uint32(e[8:])
}

// term returns term i (0 <= i < numTerms), or ok=false if its offsets are
// out of range.
func (s *Segment) term(i int) (t []byte, ok bool) {
	from, _, _ := s.entry(i)
	to, _, _ := s.entry(i + 1)
	if from > to || uint64(to) > uint64(len(s.termBytes)) {
		return nil, false
	}
	return s.termBytes[from:to], true
}

// find returns the index of term, or -1.
func (s *Segment) find(term string) int {
	lo, hi := 0, s.numTerms
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		t, ok := s.term(mid)
		if !ok {
			return -1
		}
		switch c := strings.Compare(string(t), term); {
		case c == 0:
			return mid
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return -1
}

// DocFreq implements Part.
func (s *Segment) DocFreq(term string) int {
	i := s.find(term)
	if i < 0 {
		return 0
	}
	_, _, df := s.entry(i)
	return int(df)
}

// Postings implements Part.
func (s *Segment) Postings(term string, fn func(doc uint32, tf, docLen uint32)) {
	s.postingBlocks(term, nil, func(b *postingBlock) {
		for i := range b.n {
			fn(b.docs[i], b.tfs[i], b.lens[i])
		}
	})
}

// postingBlock is up to blockSize postings of one term, as Postings gives
// them (document, frequency and document length in TokenUnits).
type postingBlock struct {
	n               int
	docs, tfs, lens [blockSize]uint32
}

// postingBlocks is Postings a block at a time: the ordinals of a block are
// decoded first and then looked up in the docs table together, so the
// lookups (cache misses in a large segment) overlap instead of each waiting
// for the previous posting's scoring.
//
// keep, when not nil, selects ordinals (ordBits): postings of other
// ordinals are passed over before their docs-table lookup, the cost that
// dominates reading a common term's list for one session of many. Once the
// term's bound is known (bound.go), only the blocks that can hold
// ordinals lo..hi are read: the run of the list that a session grouped by
// compaction (engine) occupies.
func (s *Segment) postingBlocks(term string, keep *ordSet, fn func(*postingBlock)) {
	i := s.find(term)
	if i < 0 {
		return
	}
	c, ok := s.cursor(i)
	if !ok {
		return
	}
	ranged := keep != nil && s.boundSlot(i).Load() != 0
	if ranged {
		c.skipTo(keep.lo)
	}
	var (
		b         postingBlock
		ords, tfs [blockSize]uint32
		kept      [blockSize]uint32
		st        termStat
		maxTF     uint32
	)
	u := uint64(s.units)
	for {
		m := c.block(&ords, &tfs)
		if m == 0 {
			break
		}
		b.n = 0
		for j, o := range ords[:m] {
			maxTF = max(maxTF, tfs[j])
			if keep != nil && !bitSet(keep.bits, uint64(o)) {
				continue
			}
			kept[b.n], b.tfs[b.n] = o, uint32(min(u*uint64(tfs[j]), math.MaxUint32))
			b.n++
		}
		if b.n > 0 {
			for j, o := range kept[:b.n] {
				e := s.docs[docEntry*uint64(o):]
				b.docs[j] = binary.LittleEndian.Uint32(e)
				b.lens[j] = uint32(min(u*uint64(binary.LittleEndian.Uint32(e[4:])), math.MaxUint32))
				st = st.with(b.tfs[j], b.lens[j])
			}
			fn(&b)
		}
		if ranged && uint64(ords[m-1]) >= keep.hi {
			return // past the last kept ordinal
		}
	}
	if c.bad || c.n != c.df || maxTF == 0 || ranged {
		return
	}
	if keep != nil {
		// Lengths were read for the kept postings only: the segment's
		// shortest document bounds the others.
		st = termStat{uint32(min(u*uint64(maxTF), math.MaxUint32)), s.minDocLen()}
	}
	s.learnBound(i, st)
}

// ordSet is a set of a Segment's ordinals: a bitset and its least and
// greatest member.
type ordSet struct {
	bits   []uint64
	lo, hi uint64
}

// newOrdSet returns bits as an ordSet (nil when empty).
func newOrdSet(bits []uint64) *ordSet {
	first, last := -1, -1
	for w, x := range bits {
		if x != 0 {
			if first < 0 {
				first = w*64 + mathbits.TrailingZeros64(x)
			}
			last = w*64 + 63 - mathbits.LeadingZeros64(x)
		}
	}
	if first < 0 {
		return &ordSet{bits: bits, lo: 1, hi: 0} // nothing kept; reads pass everything over
	}
	return &ordSet{bits: bits, lo: uint64(first), hi: uint64(last)}
}

func bitSet(bits []uint64, i uint64) bool {
	w := i >> 6
	return w < uint64(len(bits)) && bits[w]&(1<<(i&63)) != 0
}

// ordBits returns set's documents as a bitset over this segment's ordinals
// (postingBlocks' keep), computing and caching their ordinals.
func (s *Segment) ordBits(set *docSet) []uint64 {
	if s.dense {
		return memberBits(set.docs)
	}
	if set.ords == nil {
		set.ords = s.ordinals(set.docs)
	}
	bits := make([]uint64, (s.numDocs+63)/64)
	for _, o := range set.ords {
		if o >= 0 {
			bits[o>>6] |= 1 << (o & 63)
		}
	}
	return bits
}

// cursor reads one term's posting list forward, optionally jumping ahead
// block by block. Malformed bytes stop it (bad), never panic.
type cursor struct {
	s        *Segment
	skips    []byte // (blocks-1) skip entries
	data     []byte // the blocks
	df, n    int    // postings in the list, postings decoded
	pos      int    // offset in data of the next posting
	ord, tf  uint64 // the last decoded posting
	bad      bool
	lastSkip int // skip entries already passed
}

// cursor returns a cursor on term i's list, or ok=false if its offsets are
// out of range.
func (s *Segment) cursor(i int) (c cursor, ok bool) {
	_, from, df := s.entry(i)
	_, to, _ := s.entry(i + 1)
	if from > to || uint64(to) > uint64(len(s.post)) {
		return c, false
	}
	p := s.post[from:to]
	nb := (uint64(df) + blockSize - 1) / blockSize
	skip := skipEntry*max(nb, 1) - skipEntry
	if skip > uint64(len(p)) {
		return c, false
	}
	return cursor{s: s, skips: p[:skip], data: p[skip:], df: int(df)}, true
}

// next decodes the next posting.
func (c *cursor) next() bool {
	if c.n >= c.df || c.bad {
		return false
	}
	var v, tf uint64
	// Gaps and frequencies are mostly below 128: one byte each.
	if d := c.data[c.pos:]; len(d) >= 2 && d[0] < 0x80 && d[1] < 0x80 {
		v, tf = uint64(d[0]), uint64(d[1])
		c.pos += 2
	} else {
		var k int
		v, k = binary.Uvarint(d)
		if k <= 0 {
			c.bad = true
			return false
		}
		c.pos += k
		tf, k = binary.Uvarint(c.data[c.pos:])
		if k <= 0 {
			c.bad = true
			return false
		}
		c.pos += k
	}
	if tf == 0 || tf > math.MaxUint32 {
		c.bad = true
		return false
	}
	switch {
	case c.n%blockSize == 0: // a block starts with its ordinal itself
		if c.n > 0 && v <= c.ord {
			c.bad = true
			return false
		}
		c.ord = v
	case v == 0 || c.ord+v < c.ord: // a gap of zero, or one that wraps
		c.bad = true
		return false
	default:
		c.ord += v
	}
	if c.ord >= uint64(c.s.numDocs) {
		c.bad = true
		return false
	}
	c.tf = tf
	c.n++
	return true
}

// block decodes the postings from the cursor's position to the end of its
// block into ords and tfs (stored counts) and returns how many: next's work
// in one loop, with the same checks. It returns 0 at the end of the list; on
// malformed bytes it returns what came before them and marks the cursor bad.
func (c *cursor) block(ords, tfs *[blockSize]uint32) int {
	if c.bad || c.n >= c.df {
		return 0
	}
	d, pos, ord, tf := c.data, c.pos, c.ord, c.tf
	numDocs := uint64(c.s.numDocs)
	first := c.n
	end := min(c.df, (first/blockSize+1)*blockSize)
	k := 0
	for i := first; i < end; i++ {
		if i%blockSize != 0 {
			// Most postings after a block's first are a one-byte gap and
			// a one-byte frequency.
			for ; i < end && pos+1 < len(d); i++ {
				g, f := d[pos], d[pos+1]
				if (g|f) >= 0x80 || g == 0 || f == 0 || ord+uint64(g) >= numDocs {
					break
				}
				ord += uint64(g)
				ords[k], tfs[k] = uint32(ord), uint32(f)
				k++
				pos += 2
				tf = uint64(f)
			}
			if i == end {
				break
			}
		}
		v, m := binary.Uvarint(d[pos:])
		if m <= 0 {
			c.bad = true
			break
		}
		f, m2 := binary.Uvarint(d[pos+m:])
		if m2 <= 0 || f == 0 || f > math.MaxUint32 {
			c.bad = true
			break
		}
		next := ord + v
		if i%blockSize == 0 { // a block starts with its ordinal itself
			if i > 0 && v <= ord {
				c.bad = true
				break
			}
			next = v
		} else if v == 0 || next < ord {
			c.bad = true
			break
		}
		if next >= numDocs {
			c.bad = true
			break
		}
		ord, tf, pos = next, f, pos+m+m2
		ords[k], tfs[k] = uint32(ord), uint32(tf)
		k++
	}
	c.pos, c.ord, c.tf, c.n = pos, ord, tf, first+k
	return k
}

// skipTo moves forward to the last block whose first ordinal is <= ord when
// that is beyond the current position; next then continues from there.
func (c *cursor) skipTo(ord uint64) {
	nb := len(c.skips) / skipEntry
	j := c.lastSkip
	for j < nb && uint64(binary.LittleEndian.Uint32(c.skips[skipEntry*j:])) <= ord {
		j++
	}
	if j == c.lastSkip {
		return
	}
	c.lastSkip = j
	b := j // block number: skip entry j-1 describes block j
	if b*blockSize <= c.n {
		return
	}
	off := binary.LittleEndian.Uint32(c.skips[skipEntry*(j-1)+4:])
	if uint64(off) > uint64(len(c.data)) {
		c.bad = true
		return
	}
	c.n, c.pos = b*blockSize, int(off)
}

// posting returns the current posting: its document, the term's frequency
// and the document's length, in TokenUnits.
func (c *cursor) posting() (doc, tf, docLen uint32) {
	e := c.s.docs[docEntry*c.ord:]
	u := uint64(c.s.units)
	return binary.LittleEndian.Uint32(e), uint32(min(u*c.tf, math.MaxUint32)), uint32(min(u*uint64(binary.LittleEndian.Uint32(e[4:])), math.MaxUint32))
}

// emit calls fn with the current posting.
func (c *cursor) emit(fn func(doc uint32, tf, docLen uint32)) { fn(c.posting()) }

// checkPostings decodes term i's whole list and verifies its skip table.
func (s *Segment) checkPostings(i int) error {
	c, ok := s.cursor(i)
	if !ok {
		return errors.New("postings offsets out of range")
	}
	for {
		start := c.pos
		if !c.next() {
			break
		}
		if b := (c.n - 1) / blockSize; (c.n-1)%blockSize == 0 && b > 0 {
			e := c.skips[skipEntry*(b-1):]
			if uint64(binary.LittleEndian.Uint32(e)) != c.ord || int(binary.LittleEndian.Uint32(e[4:])) != start {
				return fmt.Errorf("skip entry %d does not match block %d", b-1, b)
			}
		}
	}
	if c.bad || c.n != c.df || c.pos != len(c.data) {
		return errors.New("postings malformed")
	}
	return nil
}

// postingsOf calls fn for the documents of set (sorted, increasing) that
// contain term, jumping over the blocks between them.
func (s *Segment) postingsOf(term string, set *docSet, fn func(doc uint32, tf, docLen uint32)) {
	i := s.find(term)
	if i < 0 {
		return
	}
	c, ok := s.cursor(i)
	if !ok {
		return
	}
	if set.ords == nil {
		set.ords = s.ordinals(set.docs)
	}
	have := false // c holds a decoded posting not yet passed
	for _, o := range set.ords {
		if o < 0 {
			continue
		}
		ord := uint64(o)
		if !have || c.ord < ord {
			c.skipTo(ord)
			have = false
			for c.next() {
				if c.ord >= ord {
					have = true
					break
				}
			}
			if !have {
				return
			}
		}
		if c.ord == ord {
			c.emit(fn)
		}
	}
}

// ordinals returns the position of each of docs (sorted, increasing) in the
// docs table, -1 for those the segment does not hold.
func (s *Segment) ordinals(docs []uint32) []int32 {
	ords := make([]int32, len(docs))
	if s.dense {
		for k, d := range docs {
			ords[k] = -1
			if int64(d) < int64(s.numDocs) {
				ords[k] = int32(d)
			}
		}
		return ords
	}
	from := 0
	for k, d := range docs {
		o, found := s.ordinalFrom(d, from)
		from = o
		ords[k] = int32(o)
		if !found {
			ords[k] = -1
		}
	}
	return ords
}

// ordinal returns the position of doc in the docs table.
func (s *Segment) ordinal(doc uint32) (uint64, bool) {
	o, ok := s.ordinalFrom(doc, 0)
	return uint64(o), ok
}

// ordinalFrom is ordinal for a doc whose position is known to be at or
// after from: a galloping search from there, so a run of increasing docs
// costs about log(gap) each instead of log(numDocs). It returns the first
// position whose doc is >= doc.
func (s *Segment) ordinalFrom(doc uint32, from int) (int, bool) {
	at := func(i int) uint32 { return binary.LittleEndian.Uint32(s.docs[docEntry*i:]) }
	lo := min(max(from, 0), s.numDocs)
	// Documents are numbered densely from 0 in a segment that lost none
	// (the usual case after compaction): doc sits at position doc.
	if int64(doc) >= int64(lo) && int64(doc) < int64(s.numDocs) && at(int(doc)) == doc {
		return int(doc), true
	}
	hi := lo
	for step := 1; hi < s.numDocs && at(hi) < doc; step *= 2 {
		lo = hi + 1
		hi = min(hi+step, s.numDocs)
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if binary.LittleEndian.Uint32(s.docs[docEntry*mid:]) < doc {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < s.numDocs && at(lo) == doc
}

// Check validates the whole segment: documents strictly increasing with
// lengths summing to TotalLen, terms strictly increasing, offsets monotonic,
// every posting list decodable with DocFreq entries in increasing order.
// It reads everything once; Open does not.
func (s *Segment) Check() error {
	var sum uint64
	prev := int64(-1)
	le := binary.LittleEndian
	for i := 0; i < s.numDocs; i++ {
		d := int64(le.Uint32(s.docs[docEntry*i:]))
		if d <= prev {
			return corrupt("document %d out of order", d)
		}
		prev = d
		sum += uint64(le.Uint32(s.docs[docEntry*i+4:]))
	}
	if sum != uint64(s.totalLen) {
		return corrupt("document lengths sum to %d, header says %d", sum, s.totalLen)
	}
	if t0, p0, _ := s.entry(0); t0 != 0 || p0 != 0 {
		return corrupt("first term entry does not start at 0")
	}
	if tn, pn, _ := s.entry(s.numTerms); uint64(tn) != uint64(len(s.termBytes)) || uint64(pn) != uint64(len(s.post)) {
		return corrupt("last term entry does not end its sections")
	}
	var last []byte
	for i := 0; i < s.numTerms; i++ {
		t, ok := s.term(i)
		if !ok {
			return corrupt("term %d offsets out of range", i)
		}
		if len(t) == 0 || (i > 0 && bytes.Compare(last, t) >= 0) {
			return corrupt("term %d (%q) empty or out of order", i, t)
		}
		last = t
		if _, _, df := s.entry(i); df == 0 || df > uint32(s.numDocs) {
			return corrupt("term %q document frequency %d", t, df)
		}
		if err := s.checkPostings(i); err != nil {
			return corrupt("term %q: %v", t, err)
		}
	}
	return nil
}
