package keyword

import (
	"encoding/binary"
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
	// (SearchAmong's list); others are ignored without a trace.
	member []uint64
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
	if a.member != nil && !a.isMember(doc) {
		return
	}
	if int(doc) < len(a.dense) {
		switch a.state[doc] {
		case accepted:
			a.dense[doc] += s
			return
		case rejected:
			return
		}
		if existingOnly {
			return
		}
		a.touched = append(a.touched, doc)
		if ok != nil && !ok(doc) {
			a.state[doc] = rejected
			return
		}
		a.state[doc] = accepted
		a.dense[doc] = s
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

func (a *accumulator) isMember(doc uint32) bool {
	w := int(doc >> 6)
	return w < len(a.member) && a.member[w]&(1<<(doc&63)) != 0
}

// addBlock adds a block of postings of a term of weight w (idf · count ·
// (k1+1)), scored as SearchAmong scores one posting.
func (a *accumulator) addBlock(b *postingBlock, w, c0, c1 float64, ok func(uint32) bool, existingOnly bool) {
	for i, doc := range b.docs[:b.n] {
		if a.member != nil && !a.isMember(doc) {
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
			fn(d, a.dense[d])
		}
	}
	for d, s := range a.sparse {
		fn(d, s)
	}
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
	for d, s := range a.sparse {
		if s >= min {
			buf = append(buf, d)
		}
	}
	slices.Sort(buf)
	return buf
}

// release cleans the touched entries and returns a to the pool.
func (a *accumulator) release() {
	for _, d := range a.touched {
		a.dense[d], a.state[d] = 0, unseen
	}
	a.touched = a.touched[:0]
	a.member = nil
	clear(a.sparse)
	clear(a.reject)
	a.dense, a.state = a.dense[:cap(a.dense)], a.state[:cap(a.state)]
	accPool.Put(a)
}
