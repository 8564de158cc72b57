package keyword

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Part is one searchable piece of a collection: the mutable index, or one
// segment opened from its serialized form. Search combines the statistics of
// all parts so that a term's IDF and the average document length are the same
// whichever part a document lives in.
//
// Implementations must be safe for concurrent calls.
type Part interface {
	// NumDocs is the number of documents the part counts in its statistics.
	NumDocs() int
	// TotalLen is the sum of the lengths of those documents, in TokenUnits.
	TotalLen() int64
	// DocFreq is the number of documents containing term.
	DocFreq(term string) int
	// Postings calls fn for every document containing term, in increasing
	// document order, with the term's frequency in it and the document's
	// length, both in TokenUnits. fn must not call back into the part's
	// writer.
	Postings(term string, fn func(doc uint32, tf, docLen uint32))
}

// ErrDuplicateDoc is returned by Add for a document number already indexed.
var ErrDuplicateDoc = errors.New("keyword: document already indexed")

// posting is one document's entry in a term's posting list.
// The document length is kept next to it so scoring needs no second lookup.
type posting struct {
	doc, tf, docLen uint32
}

// Index is the mutable in-memory inverted index. Any number of goroutines may
// search it while one goroutine adds documents; Add and the read methods are
// serialized by an RWMutex.
type Index struct {
	mu       sync.RWMutex
	postings map[string][]posting
	bounds   map[string]termStat // per term: an upper bound of its frequencies, a lower bound of its documents' lengths
	docLen   map[uint32]uint32
	totalLen int64
	maxDoc   uint32
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{
		postings: make(map[string][]posting),
		bounds:   make(map[string]termStat),
		docLen:   make(map[uint32]uint32),
	}
}

// ContextSeparator splits an indexed text into its body and its context: the
// words after the first U+001E (INFORMATION SEPARATOR TWO, never part of prose)
// are the document's context (a conversation turn's neighbouring turns) and
// count ContextWeight as much as the body's words, BM25F-style: the weighted
// frequencies are summed before saturation and the context adds its weighted
// length to the document's. A text without it is all body.
const ContextSeparator = "\x1e"

// ContextWeight is how much a context word counts next to a body word.
// Measured on locomo-dev (bench/results/retrieval.md): with the two turns on
// each side as context, 1/4, 1/3 and 1/2 give nDCG@10 0.536, 0.552 and 0.539
// against 0.448 without context.
const ContextWeight = 1.0 / TokenUnits

// TokenUnits is the unit of term frequencies and lengths in parts and
// serialized indexes: a body token counts TokenUnits, a context token 1.
const TokenUnits = 3

// weightedTerms returns the term frequencies and the length of text, in
// TokenUnits (see ContextSeparator).
func weightedTerms(text string) (map[string]uint32, uint32) {
	body, context, _ := strings.Cut(text, ContextSeparator)
	terms := Tokens(body)
	tf := make(map[string]uint32, len(terms))
	for _, t := range terms {
		tf[t] += TokenUnits
	}
	length := TokenUnits * len(terms)
	if context != "" {
		cterms := Tokens(context)
		for _, t := range cterms {
			tf[t]++
		}
		length += len(cterms)
	}
	return tf, uint32(min(length, math.MaxUint32))
}

// Add indexes text as document doc. Document numbers are the caller's (the
// engine uses its dense record numbers); each may be added once. Adding in
// increasing document order is cheapest; any order is accepted. A text with no
// tokens is still counted as a document of length 0. Text after
// ContextSeparator is the document's context.
func (x *Index) Add(doc uint32, text string) error {
	tf, length := weightedTerms(text)
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.docLen[doc]; ok {
		return fmt.Errorf("%w: %d", ErrDuplicateDoc, doc)
	}
	inOrder := len(x.docLen) == 0 || doc > x.maxDoc
	for t, n := range tf {
		list := x.postings[t]
		list = append(list, posting{doc, n, length})
		if !inOrder {
			// Keep posting lists sorted so Postings and WriteTo need no sort.
			i := sort.Search(len(list)-1, func(i int) bool { return list[i].doc > doc })
			copy(list[i+1:], list[i:len(list)-1])
			list[i] = posting{doc, n, length}
		}
		x.postings[t] = list
		x.bounds[t] = x.bounds[t].with(n, length)
	}
	x.docLen[doc] = length
	x.totalLen += int64(length)
	x.maxDoc = max(x.maxDoc, doc)
	return nil
}

// Has reports whether doc has been added.
func (x *Index) Has(doc uint32) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, ok := x.docLen[doc]
	return ok
}

// NumDocs implements Part.
func (x *Index) NumDocs() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.docLen)
}

// TotalLen implements Part.
func (x *Index) TotalLen() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.totalLen
}

// NumTerms returns the number of distinct terms.
func (x *Index) NumTerms() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.postings)
}

// DocFreq implements Part.
func (x *Index) DocFreq(term string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.postings[term])
}

// Postings implements Part. The read lock is held while fn runs, so fn must
// not call Add.
func (x *Index) Postings(term string, fn func(doc uint32, tf, docLen uint32)) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for _, p := range x.postings[term] {
		fn(p.doc, p.tf, p.docLen)
	}
}

// postingsOf calls fn for the documents of docs (sorted, increasing) that
// contain term, binary-searching the posting list instead of reading it.
func (x *Index) postingsOf(term string, set *docSet, fn func(doc uint32, tf, docLen uint32)) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	list := x.postings[term]
	for _, d := range set.docs {
		i, found := slices.BinarySearchFunc(list, d, func(p posting, d uint32) int { return cmp.Compare(p.doc, d) })
		if found {
			fn(d, list[i].tf, list[i].docLen)
		}
		list = list[i:]
	}
}

// ErrTextMismatch is returned by Remove when the text given is not the text
// the document was added with.
var ErrTextMismatch = errors.New("keyword: text does not match the indexed document")

// Remove deletes doc from the index, statistics included. text must be the
// text doc was added with (the index keeps only postings, not per-document
// term lists; callers keep the text anyway); Remove verifies it against the
// postings and changes nothing when it does not match. It reports whether doc
// was present.
//
// Segments are immutable: a document in a segment is deleted by filtering it
// out with Search's allow function until compaction rewrites the segment.
func (x *Index) Remove(doc uint32, text string) (bool, error) {
	tf, length := weightedTerms(text)
	x.mu.Lock()
	defer x.mu.Unlock()
	dl, ok := x.docLen[doc]
	if !ok {
		return false, nil
	}
	pos := make(map[string]int, len(tf))
	for t, n := range tf {
		list := x.postings[t]
		i, found := slices.BinarySearchFunc(list, doc, func(p posting, d uint32) int { return cmp.Compare(p.doc, d) })
		if !found || list[i].tf != n {
			return false, fmt.Errorf("%w: document %d", ErrTextMismatch, doc)
		}
		pos[t] = i
	}
	if length != dl {
		return false, fmt.Errorf("%w: document %d", ErrTextMismatch, doc)
	}
	for t, i := range pos {
		list := slices.Delete(x.postings[t], i, i+1)
		if len(list) == 0 {
			delete(x.postings, t)
			delete(x.bounds, t)
		} else { // the term's bounds stay: looser, still bounds
			x.postings[t] = list
		}
	}
	delete(x.docLen, doc)
	x.totalLen -= int64(dl)
	return true, nil
}

// Search is Search over this index alone, with allow taking just the
// document number.
func (x *Index) Search(query string, k int, allow func(doc uint32) bool) ([]Hit, error) {
	var f func(int, uint32) bool
	if allow != nil {
		f = func(_ int, doc uint32) bool { return allow(doc) }
	}
	return Search([]Part{x}, query, k, f)
}

// Renumber moves every document d to number newDoc[d] (newDoc covers every
// document number in use and maps them to distinct numbers), keeping texts,
// statistics and bounds: the index is the one it would be had the documents
// been added under their new numbers. The engine renumbers a compacted
// segment's documents with its graph (hnsw.Index.Permute). A mapping that
// does not cover every document or maps two to one number is refused and
// changes nothing.
func (x *Index) Renumber(newDoc []uint32) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	seen := make(map[uint32]struct{}, len(x.docLen))
	docLen := make(map[uint32]uint32, len(x.docLen))
	var maxDoc uint32
	for d, l := range x.docLen {
		if int64(d) >= int64(len(newDoc)) {
			return fmt.Errorf("keyword: renumbering covers %d documents, document %d exists", len(newDoc), d)
		}
		nd := newDoc[d]
		if _, dup := seen[nd]; dup {
			return fmt.Errorf("keyword: renumbering maps two documents to %d", nd)
		}
		seen[nd] = struct{}{}
		docLen[nd] = l
		maxDoc = max(maxDoc, nd)
	}
	for _, list := range x.postings {
		for i := range list {
			list[i].doc = newDoc[list[i].doc]
		}
		slices.SortFunc(list, func(a, b posting) int { return cmp.Compare(a.doc, b.doc) })
	}
	x.docLen, x.maxDoc = docLen, maxDoc
	return nil
}
