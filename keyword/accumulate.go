package keyword

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"
)

// docBounder is implemented by parts that know a bound on their document
// numbers; Search then accumulates their scores in a dense array instead of
// a map, which is what makes a query over 100k documents sub-millisecond.
type docBounder interface {
	// DocBound returns a number greater than every document number the part
	// currently holds (documents added later may exceed it).
	DocBound() uint32
}

// DocBound implements docBounder.
func (x *Index) DocBound() uint32 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.docLen) == 0 {
		return 0
	}
	return x.maxDoc + 1
}

// DocBound implements docBounder.
func (s *Segment) DocBound() uint32 {
	if s.numDocs == 0 {
		return 0
	}
	// Saturates at the largest document number; getAccumulator then goes
	// sparse anyway.
	last := binary.LittleEndian.Uint32(s.docs[docEntry*(s.numDocs-1):])
	return max(last, last+1)
}

// seeker is implemented by parts that can read a term's postings for a
// sorted set of documents faster than the whole list (Index by binary
// search, Segment by skipping blocks). Search uses it once only documents
// already found can still reach the top k.
type seeker interface {
	postingsOf(term string, set *docSet, fn func(doc uint32, tf, docLen uint32))
}

// docSet is a sorted list of documents to look up in posting lists, with
// what a Segment learned about them on the first lookup (their positions in
// its docs table), so a query's later terms do not search for them again.
type docSet struct {
	docs []uint32
	ords []int32 // per doc: its position in the Segment, -1 when absent; nil until computed
}

// Document states in an accumulator.
const (
	unseen   = 0
	accepted = 1
	rejected = 2
)

// accumulator sums one part's per-document scores for a query and asks the
// caller's filter once per document, not once per posting. Dense arrays are
// pooled and cleaned through the touched list, so a query costs time in
// proportion to its postings, not to the collection.
type accumulator struct {
	dense   []float64 // scores by document number, for documents < len(dense)
	state   []uint8   // unseen / accepted / rejected, same indexing
	sparse  map[uint32]float64
	reject  map[uint32]bool
	touched []uint32 // documents with state != unseen in dense
	// member, when not nil, holds the only documents that may be accepted
	// (SearchAmong's list, restrict); others are ignored without a trace,
	// and the arrays are indexed by a document's rank in the list (its
	// position in among) instead of its number: a session's scores then
	// sit in the first len(among) entries, not scattered over the segment.
	member []uint64
	prefix []uint32 // per word of member: members in the words before it
	among  []uint32 // rank -> document
}

// restrict limits a to the documents of list (increasing).
func (a *accumulator) restrict(list []uint32) {
	a.member, a.among = memberBits(list), list
	a.prefix = make([]uint32, len(a.member))
	var n uint32
	for w, x := range a.member {
		a.prefix[w] = n
		n += uint32(bits.OnesCount64(x))
	}
	if len(a.dense) < len(list) {
		a.dense = make([]float64, len(list))
		a.state = make([]uint8, len(list))
	}
	clear(a.sparse)
}

// slot returns where doc's score lives: its rank in a restricted
// accumulator, else doc itself; ok is false for a document restrict left out.
func (a *accumulator) slot(doc uint32) (uint32, bool) {
	if a.member == nil {
		return doc, true
	}
	w := int(doc >> 6)
	if w >= len(a.member) {
		return 0, false
	}
	x := a.member[w]
	bit := uint64(1) << (doc & 63)
	if x&bit == 0 {
		return 0, false
	}
	return a.prefix[w] + uint32(bits.OnesCount64(x&(bit-1))), true
}

// docOf returns the document whose score lives at slot i.
func (a *accumulator) docOf(i uint32) uint32 {
	if a.member == nil {
		return i
	}
	return a.among[i]
}

var accPool = sync.Pool{New: func() any { return new(accumulator) }}

// maxDense bounds the pooled arrays (9 bytes per document number).
const maxDense = 1 << 25

func getAccumulator(p Part) *accumulator {
	a := accPool.Get().(*accumulator)
	bound := uint32(0)
	if db, ok := p.(docBounder); ok {
		bound = db.DocBound()
	}
	// Dense only when the numbering is reasonably compact.
	if bound > 0 && bound <= maxDense && int64(bound) <= 8*int64(p.NumDocs())+4096 {
		if uint32(len(a.dense)) < bound {
			a.dense = make([]float64, bound)
			a.state = make([]uint8, bound)
		}
	} else {
		a.dense, a.state = a.dense[:0], a.state[:0]
	}
	return a
}

// add adds s to doc's score unless ok rejects doc (ok nil accepts all).
// With existingOnly, a document not seen before is ignored.
func (a *accumulator) add(doc uint32, s float64, ok func(uint32) bool, existingOnly bool) {
	i, in := a.slot(doc)
	if !in {
		return
	}
	if int(i) < len(a.dense) {
		switch a.state[i] {
		case accepted:
			a.dense[i] += s
			return
		case rejected:
			return
		}
		if existingOnly {
			return
		}
		a.touched = append(a.touched, i)
		if ok != nil && !ok(doc) {
			a.state[i] = rejected
			return
		}
		a.state[i] = accepted
		a.dense[i] = s
		return
	}
	if a.sparse == nil {
		a.sparse, a.reject = map[uint32]float64{}, map[uint32]bool{}
	}
	if v, seen := a.sparse[doc]; seen {
		a.sparse[doc] = v + s
		return
	}
	if existingOnly || a.reject[doc] {
		return
	}
	if ok != nil && !ok(doc) {
		a.reject[doc] = true
		return
	}
	a.sparse[doc] = s
}

// addBlock adds a block of postings of a term of weight w (idf · count ·
// (k1+1)), scored as SearchAmong scores one posting.
func (a *accumulator) addBlock(b *postingBlock, w, c0, c1 float64, ok func(uint32) bool, existingOnly bool) {
	for i, doc := range b.docs[:b.n] {
		if _, in := a.slot(doc); !in {
			continue // before the score's division
		}
		f := float64(b.tfs[i]) / TokenUnits
		a.add(doc, w*f/(f+c0+c1*float64(b.lens[i])), ok, existingOnly)
	}
}

// each calls fn for every accepted document and its score.
func (a *accumulator) each(fn func(doc uint32, score float64)) {
	for _, d := range a.touched {
		if a.state[d] == accepted {
			fn(a.docOf(d), a.dense[d])
		}
	}
	for d, s := range a.sparse {
		fn(d, s)
	}
}

// countAtLeast returns how many accepted documents score at least min.
func (a *accumulator) countAtLeast(min float64) int {
	n := 0
	for _, d := range a.touched {
		if a.state[d] == accepted && a.dense[d] >= min {
			n++
		}
	}
	for _, s := range a.sparse {
		if s >= min {
			n++
		}
	}
	return n
}

// candidates returns the accepted documents whose score is at least min,
// in increasing order, reusing buf.
func (a *accumulator) candidates(min float64, buf []uint32) []uint32 {
	buf = buf[:0]
	for _, d := range a.touched {
		if a.state[d] == accepted && a.dense[d] >= min {
			buf = append(buf, d)
		}
	}
	n := len(buf)
	for d, s := range a.sparse {
		if s >= min {
			buf = append(buf, d)
		}
	}
	slices.Sort(buf[:n])
	for i, d := range buf[:n] { // ranks keep the documents' order
		buf[i] = a.docOf(d)
	}
	if n < len(buf) { // the map's documents come in no order
		slices.Sort(buf)
	}
	return buf
}

// release cleans the touched entries and returns a to the pool.
func (a *accumulator) release() {
	for _, d := range a.touched {
		a.dense[d], a.state[d] = 0, unseen
	}
	a.touched = a.touched[:0]
	a.member, a.prefix, a.among = nil, nil, nil
	clear(a.sparse)
	clear(a.reject)
	a.dense, a.state = a.dense[:cap(a.dense)], a.state[:cap(a.state)]
	accPool.Put(a)
}
