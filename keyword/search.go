package keyword

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Default BM25 parameters (Lucene's): on the five BEIR-style sets in
// shared/datasets/text they beat the other common choice (0.9, 0.4) on four
// (bench/results/bm25.md).
const (
	DefaultK1 = 1.2
	DefaultB  = 0.75
)

// BM25 holds the scoring parameters. The zero value (K1 == 0 and B == 0)
// means DefaultK1 and DefaultB; any other value is used as given.
type BM25 struct {
	K1 float64 // term-frequency saturation, >= 0
	B  float64 // length normalization, in [0, 1]

	exhaustive bool // tests: score every matching document, no pruning
}

// Hit is one search result: a document of parts[Part].
type Hit struct {
	Part  int
	Doc   uint32
	Score float64
}

// ErrInvalidK is returned by Search for k < 1.
var ErrInvalidK = errors.New("keyword: k must be at least 1")

// Search scores query against parts with the default parameters; see
// BM25.Search.
func Search(parts []Part, query string, k int, allow func(part int, doc uint32) bool) ([]Hit, error) {
	return BM25{}.Search(parts, query, k, allow)
}

// Search is SearchAmong without a list of documents.
func (s BM25) Search(parts []Part, query string, k int, allow func(part int, doc uint32) bool) ([]Hit, error) {
	return s.SearchAmong(parts, query, k, nil, allow)
}

// SearchAmong returns the k best documents of parts for query by BM25, best first
// (ties: lower part, then lower document number). Statistics (document count,
// average length, document frequencies) are summed over all parts, so scores
// are comparable across parts. allow, if not nil, filters documents before
// they are ranked (the engine passes deleted documents and session filters
// here); it is called at most once per (part, document) and only for
// documents matching a query term. Documents it rejects still count in the
// statistics, as in Lucene.
//
// Scores are accumulated per part in a pooled dense array when the part's
// document numbers are compact (Index and Segment report a bound), else in a
// map, so a search costs time in proportion to the postings of its terms.
//
// among, when among[pi] is not nil, lists in increasing order the only
// documents of parts[pi] that may be returned (allow still applies to
// them): a search within one session of many. A term whose posting list is
// longer than such a list (amongSeekCost) has the listed documents looked
// up in it instead of being read whole; the results are the same either
// way.
//
// A query without tokens returns no hits and no error.
func (s BM25) SearchAmong(parts []Part, query string, k int, among [][]uint32, allow func(part int, doc uint32) bool) ([]Hit, error) {
	if k < 1 {
		return nil, ErrInvalidK
	}
	k1, b := s.params()
	if !(k1 >= 0) || math.IsInf(k1, 0) || !(b >= 0 && b <= 1) {
		return nil, fmt.Errorf("keyword: invalid BM25 parameters k1=%v b=%v", k1, b)
	}
	qterms := queryTerms(query)
	if len(qterms) == 0 || len(parts) == 0 {
		return nil, nil
	}
	var n, total int64
	for _, p := range parts {
		n += int64(p.NumDocs())
		total += p.TotalLen()
	}
	if n == 0 {
		return nil, nil
	}
	avgLen := float64(total) / float64(n)
	if avgLen == 0 {
		avgLen = 1
	}
	accs := make([]*accumulator, len(parts))
	for pi, p := range parts {
		accs[pi] = getAccumulator(p)
	}
	defer func() {
		for _, acc := range accs {
			acc.release()
		}
	}()
	// Rarest (highest-weight) terms first: once the k-th best score so far
	// exceeds what the remaining terms could add together, no document that
	// has not matched yet can reach the top k, and the long posting lists of
	// common terms only update documents already found (MaxScore's idea;
	// results are identical to the exhaustive evaluation).
	c0, c1 := k1*(1-b), k1*b/avgLen // length norm = c0 + c1*docLen
	type weighted struct {
		term  string
		w     float64 // idf · count · (k1+1)
		limit float64 // upper bound of the term's contribution (bound.go)
	}
	var terms []weighted
	for _, qt := range qterms {
		var df int64
		for _, p := range parts {
			df += int64(p.DocFreq(qt.term))
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
		w := idf * float64(qt.count) * (k1 + 1)
		terms = append(terms, weighted{qt.term, w, termLimit(parts, qt.term, w, c0, c1)})
	}
	// Sorted by weight, not by limit: limits depend on what earlier searches
	// read, and the order terms are summed in must not (scores would differ
	// in their last bits from one search to the next).
	sort.SliceStable(terms, func(i, j int) bool { return terms[i].w > terms[j].w })
	rest := make([]float64, len(terms)+1) // rest[i]: sum of the bounds of terms[i:]
	for i := len(terms) - 1; i >= 0; i-- {
		rest[i] = rest[i+1] + terms[i].limit
	}
	if among != nil && len(among) != len(parts) {
		return nil, fmt.Errorf("keyword: %d document lists for %d parts", len(among), len(parts))
	}
	for pi, list := range among {
		for i := 1; i < len(list); i++ {
			if list[i] <= list[i-1] {
				return nil, fmt.Errorf("keyword: document list of part %d is not increasing at %d", pi, i)
			}
		}
	}
	oks := make([]func(uint32) bool, len(parts))
	for pi := range parts {
		oks[pi] = acceptFunc(pi, allow)
		if among != nil && among[pi] != nil {
			accs[pi].restrict(among[pi])
		}
	}
	existingOnly, theta := false, -1.0
	var cands []uint32
	sets := make([]*docSet, len(parts))  // among's lists, their ordinals kept across terms
	keeps := make([]*ordSet, len(parts)) // a Segment's sets[pi] as ordinals (ordBits)
	for pi := range among {
		if among[pi] != nil {
			sets[pi] = &docSet{docs: among[pi]}
		}
	}
	for i, t := range terms {
		if i > 0 && !s.exhaustive {
			theta = kthScore(accs, k)
			existingOnly = theta > rest[i]
		}
		w := t.w
		for pi, p := range parts {
			acc := accs[pi]
			ok := oks[pi]
			add := func(doc uint32, tf, docLen uint32) {
				// Counts are in TokenUnits; the length norm is a ratio of two
				// lengths in the same unit.
				f := float64(tf) / TokenUnits
				acc.add(doc, w*f/(f+c0+c1*float64(docLen)), ok, existingOnly)
			}
			if sk, isSeeker := p.(seeker); isSeeker {
				df := p.DocFreq(t.term)
				// A Segment's lookups skip whole blocks only: with a
				// document per block or more every block is decoded
				// anyway, and reading the list whole is cheaper.
				worthSeeking := func(n, cost int) bool {
					return n*cost < df && (!isSegment(p) || n < df/blockSize)
				}
				var set *docSet
				switch {
				case existingOnly:
					// Only documents that can still reach theta need
					// this term's score; the others end below the k-th
					// best. (Counted first: sorting them is wasted on a
					// list read whole.)
					if worthSeeking(acc.countAtLeast(theta-rest[i]), seekCost) {
						cands = acc.candidates(theta-rest[i], cands)
						set = &docSet{docs: cands}
					}
				case sets[pi] != nil && worthSeeking(len(sets[pi].docs), amongSeekCost):
					set = sets[pi]
				}
				if set != nil {
					sk.postingsOf(t.term, set, add)
					continue
				}
			}
			if seg, isSeg := p.(*Segment); isSeg {
				if sets[pi] != nil && keeps[pi] == nil {
					if seg.dense && acc.member != nil {
						keeps[pi] = newOrdSet(acc.member) // ordinals are documents
					} else {
						keeps[pi] = newOrdSet(seg.ordBits(sets[pi]))
					}
				}
				keep := keeps[pi]
				seg.postingBlocks(t.term, keep, func(b *postingBlock) { acc.addBlock(b, w, c0, c1, ok, existingOnly) })
				continue
			}
			p.Postings(t.term, add)
		}
	}
	h := make(hitHeap, 0, k)
	for pi, acc := range accs {
		acc.each(func(doc uint32, sc float64) {
			hit := Hit{Part: pi, Doc: doc, Score: sc}
			if len(h) < k {
				heap.Push(&h, hit)
			} else if better(hit, h[0]) {
				h[0] = hit
				heap.Fix(&h, 0)
			}
		})
	}
	if len(h) == 0 {
		return nil, nil
	}
	sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) })
	return h, nil
}

// acceptFunc is the per-document filter of part pi: allow (nil accepts all).
func acceptFunc(pi int, allow func(int, uint32) bool) func(uint32) bool {
	if allow == nil {
		return nil
	}
	return func(doc uint32) bool { return allow(pi, doc) }
}

// memberBits is among's list as a bitset: a posting of any other document is
// passed over before it touches the accumulator (in a session holding a tenth
// of the store, nine postings in ten).
func memberBits(list []uint32) []uint64 {
	var bits []uint64
	if len(list) > 0 {
		bits = make([]uint64, list[len(list)-1]/64+1) // list is increasing
	}
	for _, d := range list {
		bits[d>>6] |= 1 << (d & 63)
	}
	return bits
}

func isSegment(p Part) bool {
	_, ok := p.(*Segment)
	return ok
}

// seekCost is roughly how many sequentially read postings one looked-up
// candidate costs (a binary search or a block skip); looking up candidates
// pays off when there are fewer than df/seekCost of them.
const seekCost = 16

// amongSeekCost is seekCost for SearchAmong's lists, which are looked up
// before any document was scored: there reading a posting also costs the
// filter and the accumulator, and on memory's recall benchmark (100k
// memories, 100 sessions) lists looked up in posting lists over 2x longer
// gave the lowest latency (p50 780/735 us against 829/795 us at 16x).
const amongSeekCost = 2

// kthScore returns the k-th best accepted score over accs, or -1 when fewer
// than k documents have been accepted. It runs before every term but the
// first over every document found so far, so it keeps a plain min-heap of
// the k best scores, inline, without container/heap's interface calls.
func kthScore(accs []*accumulator, k int) float64 {
	h := make([]float64, 0, k)
	push := func(s float64) {
		if len(h) < k {
			h = append(h, s)
			for i := len(h) - 1; i > 0; { // sift up
				p := (i - 1) / 2
				if h[p] <= h[i] {
					break
				}
				h[p], h[i] = h[i], h[p]
				i = p
			}
			return
		}
		if s <= h[0] {
			return
		}
		h[0] = s
		for i := 0; ; { // sift down
			l, m := 2*i+1, i
			if l < len(h) && h[l] < h[m] {
				m = l
			}
			if r := l + 1; r < len(h) && h[r] < h[m] {
				m = r
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for _, acc := range accs {
		for _, d := range acc.touched {
			if acc.state[d] == accepted {
				push(acc.dense[d])
			}
		}
		for _, s := range acc.sparse {
			push(s)
		}
	}
	if len(h) < k {
		return -1
	}
	return h[0]
}

func (s BM25) params() (k1, b float64) {
	if s.K1 == 0 && s.B == 0 {
		return DefaultK1, DefaultB
	}
	return s.K1, s.B
}

type queryTerm struct {
	term  string
	count int
}

// queryTerms returns the distinct terms of query with their multiplicity, in
// order of first appearance, without the query stopwords (queryStopList)
// unless the query has nothing else.
func queryTerms(query string) []queryTerm {
	var out, stopped []queryTerm
	idx := map[string]int{}
	for _, t := range Tokens(query) {
		if i, ok := idx[t]; ok {
			out[i].count++
			continue
		}
		idx[t] = len(out)
		out = append(out, queryTerm{t, 1})
	}
	for _, qt := range out {
		if _, stop := queryStopwords[qt.term]; !stop {
			stopped = append(stopped, qt)
		}
	}
	if len(stopped) == 0 {
		return out // "who is he?": better the question words than nothing
	}
	return stopped
}

// queryStopList holds the words a query loses before it is scored, on top of
// the stopwords Tokens drops everywhere: interrogatives, auxiliary verbs and
// pronouns, which questions are made of ("When did Caroline go to the support
// group?") and which match the questions and small talk of a conversation
// rather than its answers, and Chinese question words (with their characters
// and bigrams). They stay in indexed text (the index is not rebuilt) and are
// dropped from queries only. Measured with BM25 alone on the six text sets
// (keyword's TestConversationSweep and TestChineseQueryStopSweep, -sweep):
// nDCG@10 rises on all six (locomo-dev 0.448 -> 0.494, cisi 0.381 -> 0.402,
// rgb en 0.416 -> 0.431, cranfield 0.337 -> 0.342, scifact 0.683 -> 0.685,
// rgb zh 0.493 -> 0.500).
var queryStopList = strings.Fields("what when where who whom whose which why how did does do is are was were be been has have had would could should can will shall may might i me my you your yours he him his she her hers it its we us our they them their this that these those am " +
	"什么 谁 哪 哪里 哪个 怎么 怎样 如何 为什么 吗 呢 多少 几")

var queryStopwords = map[string]struct{}{}

// IsQueryStopword reports whether the term (a token of Tokens) is one that
// queries drop: an interrogative, auxiliary verb or pronoun.
func IsQueryStopword(term string) bool {
	_, ok := queryStopwords[term]
	return ok
}

func init() {
	for _, w := range queryStopList {
		for _, t := range Tokens(w) { // the stemmed form ("does" -> "doe")
			queryStopwords[t] = struct{}{}
		}
	}
}

// better orders hits: higher score first, then lower part, then lower doc.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.Part != b.Part {
		return a.Part < b.Part
	}
	return a.Doc < b.Doc
}

// hitHeap is a min-heap on quality: h[0] is the worst kept hit.
type hitHeap []Hit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(Hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
