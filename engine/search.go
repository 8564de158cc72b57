package engine

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/keyword"
	"github.com/engramdb/engram/quant"
)

// MaxK is the largest K a search accepts.
const MaxK = 10000

// SearchRequest is one vector search.
type SearchRequest struct {
	Vector []float32
	K      int
	Filter *Filter
	// Ef is the HNSW beam width per part (0: hnsw's default, at least K).
	Ef int
	// Exact scans every live record with float32 distances instead of
	// walking the graphs.
	Exact bool
	// WithVectors fills Hit.Record.Vector.
	WithVectors bool
	// NoText leaves Hit.Record.Text empty, skipping the decompression of
	// text blocks (fetch the text of the few hits kept with Get).
	NoText bool
	// IDsOnly leaves Hit.Record empty (only Hit.ID and the scores are
	// set), skipping the text and metadata reads: for callers that fetch
	// records later, or only need IDs.
	IDsOnly bool

	// strategy forces the hnsw strategy of filtered graph searches
	// (tests; zero: the planner's choice).
	strategy hnsw.Strategy
}

// Hit is one search result. Score is higher for closer records: the cosine
// similarity for Cosine, the inner product for Dot, the negated squared
// distance for L2; for SearchText the BM25 score. Distance is the metric's
// distance (smaller is closer; 0 for SearchText). Record is a copy, without
// the vector unless asked for.
type Hit struct {
	ID       string
	Score    float64
	Distance float32
	Record   Record
}

// candidate is a hit before its record is materialized.
type candidate struct {
	part  int // -1: memtable; else index into segs
	node  uint32
	dist  float32
	score float64
	id    string
}

// Search returns the K records closest to req.Vector that req.Filter
// matches, closest first (ties by ID).
func (c *Collection) Search(ctx context.Context, req SearchRequest) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.K < 1 || req.K > MaxK {
		return nil, fmt.Errorf("%w: K %d outside 1..%d", ErrInvalid, req.K, MaxK)
	}
	if req.Ef < 0 || (req.Ef > 0 && req.Ef < req.K) || req.Ef > 1<<16 {
		return nil, fmt.Errorf("%w: Ef %d must be 0 or in K..65536", ErrInvalid, req.Ef)
	}
	if err := req.Filter.Validate(); err != nil {
		return nil, err
	}
	q, err := c.queryVector(req.Vector, req.Exact)
	if err != nil {
		return nil, err
	}
	var hits []Hit
	err = c.readNeeding(true, func() error {
		var cands []candidate
		var err error
		if req.Exact {
			cands, err = c.exactLocked(q, req.K, req.Filter)
		} else {
			cands, err = c.approxLocked(q, req)
		}
		if err != nil {
			return err
		}
		for i := range cands {
			cands[i].score = scoreOf(c.cfg.Metric, cands[i].dist)
			if cands[i].id == "" {
				cands[i].id = c.idOf(cands[i])
			}
		}
		sort.Slice(cands, func(i, j int) bool { return less(cands[i], cands[j]) })
		cands = cands[:min(len(cands), req.K)]
		if req.IDsOnly {
			hits = make([]Hit, len(cands))
			for i, cd := range cands {
				hits[i] = Hit{ID: cd.id, Score: cd.score, Distance: cd.dist}
			}
			return nil
		}
		hits, err = c.materializeLocked(cands, req.WithVectors, !req.NoText)
		return err
	})
	return hits, err
}

// queryVector checks a query vector. The graph search normalizes (for
// Cosine) on its own, so only exact scans need the normalized copy; the
// check itself is one SIMD dot product: NaN and Inf components, and
// components so large that the squared norm overflows, make it non-finite.
func (c *Collection) queryVector(v []float32, exact bool) ([]float32, error) {
	if len(v) != c.cfg.Dim {
		return nil, fmt.Errorf("%w: query has dimension %d, collection %q wants %d", ErrDimension, len(v), c.cfg.Name, c.cfg.Dim)
	}
	norm := float64(quant.DotFloat32(v, v))
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return nil, fmt.Errorf("%w: query vector has NaN, Inf or overflowing components", ErrInvalid)
	}
	if c.cfg.Metric == quant.Cosine && norm == 0 {
		return nil, fmt.Errorf("%w: zero query vector in a cosine collection", ErrInvalid)
	}
	if !exact {
		return v, nil
	}
	return validateRecord(c.cfg, &Record{ID: "query", Vector: v})
}

func scoreOf(m quant.Metric, dist float32) float64 {
	if m == quant.Cosine {
		return 1 - float64(dist)
	}
	return -float64(dist)
}

// partFilter returns the hnsw filter for the memtable (part < 0) or a
// segment: nil when the graph's own tombstones already exclude everything
// that must be excluded, a bitset from the namespace postings when f pins
// the namespace field (hnsw scans a small bitset exactly), else a function
// evaluating f per node.
func (c *Collection) partFilter(part int, f *Filter) (hnsw.Filter, error) {
	ns, useNS := f.namespaceValue(c.db.opts.NamespaceField)
	if part < 0 {
		m := c.mem
		switch {
		case f == nil:
			return nil, nil // dead nodes are hnsw tombstones
		case useNS:
			bs := hnsw.NewBitset(len(m.recs))
			for node := range m.recs {
				if !m.recs[node].dead && f.match(m.getter(uint32(node))) {
					_ = bs.Set(uint32(node))
				}
			}
			return bs, nil
		}
		return hnsw.FilterFunc(func(node uint32) bool {
			return int(node) < len(m.recs) && !m.recs[node].dead && f.match(m.getter(node))
		}), nil
	}
	s := c.segs[part]
	if f == nil && s.ndel == s.view.Len()-s.view.Live() {
		// Deleted nodes are a superset of the graph's tombstones; equal
		// counts mean they are the same set.
		return nil, nil
	}
	if useNS {
		nodes, err := s.namespace(c.db.opts.NamespaceField, ns)
		if err == nil {
			// The postings already decide a filter that is just the
			// namespace equality: no metadata lookups then.
			only := f.op == opEq
			if only && sessionSetBytes > 0 {
				return s.sessionSet(ns, nodes).bits, nil
			}
			match := s.matcher(f)
			bs := hnsw.NewBitset(s.n)
			for _, node := range nodes {
				if !s.isDeleted(node) && match(node) {
					_ = bs.Set(node)
				}
			}
			return bs, nil
		}
		if err != errNoNamespace {
			return nil, err
		}
	}
	match := s.matcher(f)
	return hnsw.FilterFunc(func(node uint32) bool {
		return !s.isDeleted(node) && match(node)
	}), nil
}

func (c *Collection) approxLocked(q []float32, req SearchRequest) ([]candidate, error) {
	var out []candidate
	search := func(part int, sr hnsw.Searcher) error {
		if sr.Len() == 0 {
			return nil
		}
		filt, err := c.partFilter(part, req.Filter)
		if err != nil {
			return err
		}
		res, err := sr.Search(q, req.K, hnsw.SearchOptions{Ef: req.Ef, Filter: filt, Strategy: req.strategy})
		if err != nil {
			return fmt.Errorf("engine: search: %w", err)
		}
		for _, r := range res {
			out = append(out, candidate{part: part, node: r.ID, dist: r.Distance})
		}
		return nil
	}
	if err := search(-1, c.mem.idx); err != nil {
		return nil, err
	}
	for i, s := range c.segs {
		if s.live() == 0 {
			continue
		}
		if err := search(i, s.view); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// exactLocked scans every live record with float32 distances.
func (c *Collection) exactLocked(q []float32, k int, f *Filter) ([]candidate, error) {
	h := &topK{k: k}
	m := c.mem
	for node := range m.recs {
		if m.recs[node].dead || !f.match(m.getter(uint32(node))) {
			continue
		}
		h.push(candidate{part: -1, node: uint32(node), dist: quant.FloatDistance(c.cfg.Metric, q, m.idx.Vector(uint32(node))), id: m.recs[node].rec.ID})
	}
	for i, s := range c.segs {
		match := s.matcher(f)
		for node := uint32(0); node < uint32(s.n); node++ {
			if s.isDeleted(node) || !match(node) {
				continue
			}
			vec, err := s.view.CheckedVector(node)
			if err != nil {
				return nil, err
			}
			h.push(candidate{part: i, node: node, dist: quant.FloatDistance(c.cfg.Metric, q, vec), id: s.id(node)})
		}
	}
	return h.items, nil
}

// topK keeps the k smallest candidates by (dist, id); k is small, so a
// sorted slice with binary insertion is enough.
type topK struct {
	k     int
	items []candidate
}

func less(a, b candidate) bool {
	if a.dist != b.dist {
		return a.dist < b.dist
	}
	return a.id < b.id
}

func (t *topK) push(cd candidate) {
	if len(t.items) == t.k && !less(cd, t.items[t.k-1]) {
		return
	}
	i := sort.Search(len(t.items), func(i int) bool { return less(cd, t.items[i]) })
	if len(t.items) < t.k {
		t.items = append(t.items, candidate{})
	}
	copy(t.items[i+1:], t.items[i:len(t.items)-1])
	t.items[i] = cd
}

func (c *Collection) idOf(cd candidate) string {
	if cd.part < 0 {
		return c.mem.recs[cd.node].rec.ID
	}
	return c.segs[cd.part].id(cd.node)
}

// materializeLocked builds the hits of cands, in order.
func (c *Collection) materializeLocked(cands []candidate, withVec, withText bool) ([]Hit, error) {
	hits := make([]Hit, 0, len(cands))
	for _, cd := range cands {
		w := where{node: cd.node}
		if cd.part >= 0 {
			w.seg = c.segs[cd.part]
		}
		r, err := c.recordAt(w, withVec, withText)
		if err != nil {
			return nil, err
		}
		hits = append(hits, Hit{ID: r.ID, Score: cd.score, Distance: cd.dist, Record: r})
	}
	return hits, nil
}

// amongLists returns, for keyword.SearchAmong, the documents of each part
// whose filter is a bitset small enough for BM25 to look them up in a
// posting list rather than read it (a session's records among many
// sessions'); nil when no part has one. A segment's cached session set
// gives its list once for every search.
func (c *Collection) amongLists(parts []keyword.Part, allows []hnsw.Filter) [][]uint32 {
	var among [][]uint32
	for i, a := range allows {
		// keyword looks a list up only in longer posting lists (at most
		// NumDocs long): a list of half the part or more is never used.
		bs, ok := a.(*hnsw.Bitset)
		if !ok || 2*bs.Count() >= parts[i].NumDocs() {
			continue
		}
		if among == nil {
			among = make([][]uint32, len(parts))
		}
		if i > 0 {
			if ids := c.segs[i-1].cachedIDs(bs); ids != nil {
				among[i] = ids
				continue
			}
		}
		among[i] = bs.AppendIDs(make([]uint32, 0, bs.Count()))
	}
	return among
}

// TextRequest is one BM25 search.
type TextRequest struct {
	Query  string
	K      int
	Filter *Filter
	// NoText leaves Hit.Record.Text empty (see SearchRequest.NoText).
	NoText bool
}

// SearchText returns the k records best matching query by BM25 (statistics
// over the whole collection) that f matches, best first. It is
// SearchTextWith without options.
func (c *Collection) SearchText(ctx context.Context, query string, k int, f *Filter) ([]Hit, error) {
	return c.SearchTextWith(ctx, TextRequest{Query: query, K: k, Filter: f})
}

// SearchTextWith runs a BM25 search; Hit.Score is the BM25 score.
func (c *Collection) SearchTextWith(ctx context.Context, req TextRequest) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.K < 1 || req.K > MaxK {
		return nil, fmt.Errorf("%w: k %d outside 1..%d", ErrInvalid, req.K, MaxK)
	}
	if err := req.Filter.Validate(); err != nil {
		return nil, err
	}
	if len(req.Query) > MaxTextLen {
		return nil, fmt.Errorf("%w: query of %d bytes, limit %d", ErrInvalid, len(req.Query), MaxTextLen)
	}
	var hits []Hit
	err := c.read(func() error {
		parts := []keyword.Part{c.mem.kw}
		allows := make([]hnsw.Filter, 1+len(c.segs))
		var err error
		if allows[0], err = c.partFilter(-1, req.Filter); err != nil {
			return err
		}
		for i, s := range c.segs {
			kw, err := s.keyword()
			if err != nil {
				return err
			}
			parts = append(parts, kw)
			if allows[i+1], err = c.partFilter(i, req.Filter); err != nil {
				return err
			}
		}
		// The same per-part filters as vector search: a bitset from the
		// namespace postings when the filter pins the namespace field.
		allow := func(part int, doc uint32) bool {
			if a := allows[part]; a != nil {
				return a.Allow(doc)
			}
			if part == 0 {
				return int(doc) < len(c.mem.recs) && !c.mem.recs[doc].dead
			}
			return !c.segs[part-1].isDeleted(doc)
		}
		res, err := keyword.BM25{}.SearchAmong(parts, req.Query, req.K, c.amongLists(parts, allows), allow)
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		cands := make([]candidate, len(res))
		for i, r := range res {
			cands[i] = candidate{part: r.Part - 1, node: r.Doc, score: r.Score}
		}
		hits, err = c.materializeLocked(cands, false, !req.NoText)
		return err
	})
	return hits, err
}
