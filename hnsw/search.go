package hnsw

import (
	"fmt"
	"math"
	"sync"
)

// Result is one search hit. Distance is in the metric's units (smaller is
// closer): float32 distance after rescoring, or the code distance scaled to
// float units under NoRescore.
type Result struct {
	ID       uint32
	Distance float32
}

// SearchOptions tunes one search. The zero value searches with DefaultEf,
// no filter, rescoring on.
type SearchOptions struct {
	// Ef is the beam width on level 0 (0: max(DefaultEf, k)); it must be
	// at least k.
	Ef int
	// Filter, when not nil, restricts results to the ids it allows.
	Filter Filter
	// NoRescore returns the ef best by code distance without rescoring
	// them with the full-precision vectors.
	NoRescore bool
}

// Searcher is what Index and View have in common.
type Searcher interface {
	// Search returns up to k nearest live ids to q, closest first.
	Search(q []float32, k int, opts SearchOptions) ([]Result, error)
	// Len is the number of ids assigned, deleted ones included.
	Len() int
	// Dim is the vector dimension.
	Dim() int
	// Vector returns the stored vector of id, nil if there is none.
	Vector(id uint32) []float32
	// Deleted reports whether id is a tombstone.
	Deleted(id uint32) bool
}

var (
	_ Searcher = (*Index)(nil)
	_ Searcher = (*View)(nil)
)

// ScanFactor sets when a filtered search scans instead of walking the
// graph: when the filter reports (Counter) allowing at most
// ScanFactor·sqrt(live·ef) ids. A walk visits about ef/selectivity nodes and
// a scan touches every allowed one, so the crossover grows like the square
// root of live·ef. Measured on GloVe-100 100k at ef=120 (bench/results/
// hnsw.md): the scan (batched int8 distances, best rescored) is faster up to
// about 25% selectivity, i.e. 25k ≈ 7·sqrt(100k·120); at 10k it is faster
// at every selectivity measured. Scan results are at least as good as the
// walk's (recall@10 1.000 against brute force in those runs). A filter
// that cannot count (FilterFunc) is walked, and the walk switches to the
// scan once 1024 evaluated nodes show a pass rate that puts the allowed
// count under the same limit.
const ScanFactor = 7.0

// plan validates a query and decides how to run it.
type plan struct {
	q     []float32
	k, ef int
	acc   accept
	exact bool
}

func makePlan(g *graph, q []float32, k int, opts SearchOptions, live int, hasDeletes bool) (plan, error) {
	var p plan
	if k <= 0 {
		return p, fmt.Errorf("%w: k = %d, want > 0", ErrBadArgument, k)
	}
	ef := opts.Ef
	if ef == 0 {
		ef = max(DefaultEf, k)
	}
	if ef < k {
		return p, fmt.Errorf("%w: ef %d < k %d", ErrBadArgument, ef, k)
	}
	pq, err := prepare(q, g.dim, g.metric)
	if err != nil {
		return p, err
	}
	p = plan{q: pq, k: k, ef: ef, acc: accept{deletes: hasDeletes}}
	f := opts.Filter
	if b, ok := f.(*Bitset); ok {
		if b == nil {
			f = nil
		} else {
			p.acc.bits = b.words
		}
	} else {
		p.acc.filter = f
	}
	limit := ScanFactor * math.Sqrt(float64(max(live, 0))*float64(ef))
	if c, ok := f.(Counter); ok {
		p.exact = float64(c.Count()) <= limit
	} else if f != nil {
		// Estimated during the walk from the share of nodes it passes.
		p.acc.scanBelow, p.acc.live = limit, float64(live)
	}
	return p, nil
}

// run executes p on g (n node slots, entry point ep on level top),
// recording its reads in tr when tr is not nil.
func (p *plan) run(g *graph, pool *sync.Pool, n int, ep uint32, top int, rescore bool, tr *trace) []Result {
	s, _ := pool.Get().(*scratch)
	if s == nil {
		s = new(scratch)
	}
	s.tr = tr
	defer func() { s.tr = nil; pool.Put(s) }()
	if p.exact {
		return g.scan(s, p.q, p.k, n, &p.acc, rescore)
	}
	return g.search(s, p.q, p.k, p.ef, n, ep, top, &p.acc, rescore)
}
