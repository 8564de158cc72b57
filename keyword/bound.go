package keyword

import (
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"
)

// A term's contribution to a document's BM25 score rises with its frequency
// and falls with the document's length, so the largest frequency and the
// shortest document among a term's postings bound it. BM25's own limit,
// idf·(k1+1) for an unbounded frequency, is about twice what short texts
// reach (they mostly say a word once), and MaxScore (SearchAmong) stops
// reading the long lists of common terms only once the k-th best score
// passes what the remaining terms could add: with the tighter bound it
// stops sooner, and the results stay exactly the exhaustive ones.

// termStat is a term's largest frequency and shortest document length, in
// TokenUnits; the zero value is "no postings".
type termStat struct {
	maxTF, minDocLen uint32
}

// with returns s widened to cover a posting of frequency tf in a document
// of length docLen.
func (s termStat) with(tf, docLen uint32) termStat {
	if s.maxTF == 0 {
		return termStat{tf, docLen}
	}
	return termStat{max(s.maxTF, tf), min(s.minDocLen, docLen)}
}

// merge returns a termStat covering both s and o.
func (s termStat) merge(o termStat) termStat {
	if o.maxTF == 0 {
		return s
	}
	return s.with(o.maxTF, o.minDocLen)
}

// termBounder is implemented by parts that can say, for a term, a termStat
// covering all its postings (ok false: not known, use BM25's own limit).
type termBounder interface {
	termBound(term string) (termStat, bool)
}

// termBound implements termBounder: the Index keeps its terms' bounds as
// documents are added (a removal leaves them looser, never wrong).
func (x *Index) termBound(term string) (termStat, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	st, ok := x.bounds[term]
	return st, ok
}

// segBounds caches a Segment's term bounds, learned for free whenever a
// term's list is read whole (Postings): a term never read whole keeps
// BM25's limit, and is the kind looked up by document anyway.
type segBounds struct {
	once  sync.Once
	terms []atomic.Uint64 // per term index: maxTF<<32 | minDocLen, 0 while unknown

	minLenOnce sync.Once
	minLen     uint32 // the shortest document, in TokenUnits
}

// minDocLen returns the length of the segment's shortest document in
// TokenUnits (one pass over the docs table, on first use).
func (s *Segment) minDocLen() uint32 {
	s.bounds.minLenOnce.Do(func() {
		m := uint64(math.MaxUint32)
		for i := range s.numDocs {
			m = min(m, uint64(binary.LittleEndian.Uint32(s.docs[docEntry*i+4:]))*uint64(s.units))
		}
		s.bounds.minLen = uint32(min(m, math.MaxUint32))
	})
	return s.bounds.minLen
}

func (s *Segment) boundSlot(i int) *atomic.Uint64 {
	s.bounds.once.Do(func() { s.bounds.terms = make([]atomic.Uint64, s.numTerms) })
	return &s.bounds.terms[i]
}

// termBound implements termBounder.
func (s *Segment) termBound(term string) (termStat, bool) {
	i := s.find(term)
	if i < 0 {
		return termStat{}, false
	}
	v := s.boundSlot(i).Load()
	if v == 0 {
		return termStat{}, false
	}
	return termStat{uint32(v >> 32), uint32(v)}, true
}

// learnBound records term i's bound after its whole list was read.
func (s *Segment) learnBound(i int, st termStat) {
	if st.maxTF > 0 {
		s.boundSlot(i).Store(uint64(st.maxTF)<<32 | uint64(st.minDocLen))
	}
}

// boundSlack makes a bound strictly above every score it covers despite
// rounding: the bound and a document's contribution are computed by the
// same monotone operations, but sums of them are rounded in other orders.
const boundSlack = 1 + 1e-9

// termLimit returns the most a term of weight w (idf · count · (k1+1)) can
// add to a document's score over parts: st's bound where every part that
// holds the term knows one, else w.
func termLimit(parts []Part, term string, w, c0, c1 float64) float64 {
	var all termStat
	for _, p := range parts {
		if p.DocFreq(term) == 0 {
			continue
		}
		tb, ok := p.(termBounder)
		if !ok {
			return w
		}
		st, ok := tb.termBound(term)
		if !ok {
			return w
		}
		all = all.merge(st)
	}
	if all.maxTF == 0 {
		return w
	}
	f := float64(all.maxTF) / TokenUnits
	return math.Min(w, w*f/(f+c0+c1*float64(all.minDocLen))*boundSlack)
}
