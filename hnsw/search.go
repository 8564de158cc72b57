package hnsw

import (
	"fmt"
	"math"
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
	// Width is how many of its best unexpanded nodes the walk on level 0
	// expands together, 1 to DefaultWidth (0: DefaultWidth). Expanding
	// several at once overlaps their waits on memory (see the package
	// doc's Search section); 1 walks one node at a time, as builds do.
	Width int

	// Strategy forces how a filtered search runs; StrategyAuto (the zero
	// value) lets the planner choose (see the package doc's Filters
	// section). Forcing is for measurements and tests: every strategy
	// returns only allowed ids, but may return fewer or worse results
	// where it does not fit.
	Strategy Strategy

	// planner, when set, replaces the default thresholds (tests).
	planner *planner
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
// ScanFactor·sqrt(live·ef) ids (and at most ScanMax, below). A walk
// visits about ef/selectivity nodes and a scan touches every allowed one,
// so the crossover grows like the square root of live·ef. Measured on
// GloVe-100 100k at ef=120 (bench/results/hnsw.md): the scan (batched int8
// distances, best rescored) is faster than the plain walk up to about 25%
// selectivity, i.e. 25k ≈ 7·sqrt(100k·120); at 10k it is faster at every
// selectivity measured. Scan results are at least as good as the walk's
// (recall@10 1.000 against brute force in those runs). A filter that
// cannot count (FilterFunc) is walked, and the walk switches to the scan
// once 1024 evaluated nodes show a pass rate that puts the allowed count
// under the same limit.
const ScanFactor = 7.0

// ScanMax caps the scan for counting filters: above ScanMax·ef allowed ids
// the two-hop walk (which computes distances for allowed nodes only, a few
// thousand per query) is cheaper than touching every allowed code. See the
// package doc's Filters section for the measurements.
const ScanMax = 64

// TwoHopMax is the selectivity (allowed / live) above which a counting
// filter is walked plainly: past it most links of a node are allowed, so
// the plain walk wastes little on disallowed nodes and the two-hop walk's
// extra list reads buy nothing. See the package doc's Filters section.
const TwoHopMax = 0.1

// twoHopSparse is the selectivity below which the planner doubles ef for
// a two-hop walk; up to it, it scans up to SparseScanMax·ef ids instead.
const twoHopSparse = 0.02

// SparseScanMax raises the scan's cap for sparse filters (selectivity at
// most 2%): in a large graph their allowed subgraph falls apart, and the
// two-hop walk's recall with it, whatever its ef. On a 1M x 1024-d store
// (TestStrategiesOnStore, the package doc's table) sessions of 0.5%, 1%
// and 2% got recall@10 0.49-0.78, 0.66-0.87 and 0.83-0.93 from the two-hop
// walk (0.52, 0.71 and 0.86 at ef 256) and 1.000 from the scan, in 1.4,
// 4.9 and 9.0 ms.
const SparseScanMax = 320

// Strategy is how a filtered query runs (see the package doc's Filters
// section).
type Strategy uint8

// The strategies.
const (
	StrategyAuto   Strategy = iota // the planner chooses
	StrategyWalk                   // beam search over every node, the filter on the results
	StrategyScan                   // every allowed code, no graph
	StrategyTwoHop                 // beam search over allowed nodes, bridging disallowed ones
)

func (s Strategy) String() string {
	switch s {
	case StrategyAuto:
		return "auto"
	case StrategyWalk:
		return "walk"
	case StrategyScan:
		return "scan"
	case StrategyTwoHop:
		return "twohop"
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// Plan reports the strategy Search uses for a filter that counts itself
// (Counter) allowing count ids of live ones, at beam width ef (0: the
// default for k=10). A filter that cannot count is walked (and may switch
// to the scan, see ScanFactor).
func Plan(count, live, ef int) Strategy {
	if ef <= 0 {
		ef = max(DefaultEf, 10)
	}
	return defaultPlanner.choose(count, live, ef)
}

// planner holds the thresholds that choose a strategy for a counting
// filter; tests shrink them to exercise every strategy on small graphs.
type planner struct {
	scanFactor    float64 // scan when count <= scanFactor·sqrt(live·ef) ...
	scanMax       float64 // ... and count <= scanMax·ef
	sparseScanMax float64 // (count <= sparseScanMax·ef up to twoHopSparse)
	twoHopMax     float64 // else two-hop when count <= twoHopMax·live
}

var defaultPlanner = planner{scanFactor: ScanFactor, scanMax: ScanMax, sparseScanMax: SparseScanMax, twoHopMax: TwoHopMax}

// choose returns the Strategy for a filter allowing count of live ids.
func (pl *planner) choose(count, live, ef int) Strategy {
	c, l := float64(count), float64(max(live, 0))
	switch {
	case c <= pl.scanLimit(live, ef):
		return StrategyScan
	case c <= twoHopSparse*l && c <= min(pl.sparseScanMax*float64(ef), pl.scanFactor*math.Sqrt(l*float64(ef))):
		return StrategyScan
	case c <= pl.twoHopMax*l:
		return StrategyTwoHop
	}
	return StrategyWalk
}

// scanLimit is the largest allowed count that is scanned.
func (pl *planner) scanLimit(live, ef int) float64 {
	return min(pl.scanFactor*math.Sqrt(float64(max(live, 0))*float64(ef)), pl.scanMax*float64(ef))
}

// plan validates a query and decides how to run it.
type plan struct {
	q     []float32
	k, ef int
	width int // nodes the level-0 walk expands together
	acc   accept
	strat Strategy
	count int // ids the filter allows (counting filters only)
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
	width := opts.Width
	if width == 0 {
		width = DefaultWidth
	}
	if width < 1 || width > DefaultWidth {
		return p, fmt.Errorf("%w: width %d, want 1 to %d", ErrBadArgument, opts.Width, DefaultWidth)
	}
	pq, err := prepare(q, g.dim, g.metric)
	if err != nil {
		return p, err
	}
	p = plan{q: pq, k: k, ef: ef, width: width, acc: accept{deletes: hasDeletes}}
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
	pl := &defaultPlanner
	if opts.planner != nil {
		pl = opts.planner
	}
	if c, ok := f.(Counter); ok {
		p.count = c.Count()
		p.strat = pl.choose(p.count, live, ef)
	} else if f != nil {
		// Estimated during the walk from the share of nodes it passes.
		p.acc.scanBelow, p.acc.live = pl.scanLimit(live, ef), float64(live)
	}
	switch opts.Strategy {
	case StrategyAuto:
		if p.strat == StrategyAuto {
			p.strat = StrategyWalk
		}
		if p.strat == StrategyTwoHop && float64(p.count) < twoHopSparse*float64(live) {
			// A sparse allowed set breaks into islands the two-hop
			// walk reaches less surely: a wider beam holds recall
			// (forced two-hop at 1% on 30k clustered 64-d vectors:
			// recall@10 0.954 at ef 64, 0.968 at 128).
			p.ef = 2 * ef
		}
	case StrategyWalk, StrategyScan, StrategyTwoHop:
		p.strat = opts.Strategy
		p.acc.scanBelow = 0
	default:
		return p, fmt.Errorf("%w: strategy %v", ErrBadArgument, opts.Strategy)
	}
	return p, nil
}

// run executes p on g (n node slots, entry point ep on level top),
// recording its reads in tr when tr is not nil.
func (p *plan) run(g *graph, pool *kept[scratch], n int, ep uint32, top int, rescore bool, tr *trace) ([]Result, error) {
	s := pool.get()
	s.tr, s.err = tr, nil
	defer func() { s.tr, s.err = nil, nil; pool.put(s) }()
	var res []Result
	switch p.strat {
	case StrategyScan:
		res = g.scan(s, p.q, p.k, n, &p.acc, rescore)
	case StrategyTwoHop:
		res = g.searchTwoHop(s, p.q, p.k, p.ef, n, ep, top, &p.acc, p.count, rescore)
	default:
		res = g.search(s, p.q, p.k, p.ef, p.width, n, ep, top, &p.acc, rescore)
	}
	if s.err != nil {
		return nil, s.err
	}
	return res, nil
}
