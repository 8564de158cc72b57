package hnsw

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/engramdb/engram/quant"
)

// Node flags.
const (
	flagPresent  uint32 = 1 << iota // vector, code and level written
	flagDeleted                     // tombstone: walked, never returned
	flagUnlinked                    // tombstone whose lists were cleared by a repair pass
	flagMask     = flagPresent | flagDeleted | flagUnlinked
)

// graph is the node storage shared by Index (arrays sized to capacity,
// growing) and View (arrays aliasing a serialized layout). Neighbour lists
// are read with atomic loads so that an Index may update them under its
// striped locks while searches run; on a View the loads are plain moves.
type graph struct {
	dim    int
	m      int
	metric quant.Metric
	quant  quant.Quantizer
	// floatLinks makes the build choose links by float distances (the
	// search that finds the candidates still walks codes).
	floatLinks bool

	codes    []int8    // id*dim
	vectors  []float32 // id*dim
	level0   []uint32  // id*(1+2m): count, then ids
	levels   []uint8   // id
	upperOff []uint32  // id: start of the node's upper lists in upper
	upper    []uint32  // (level-1)*(1+m) past upperOff: count, then ids
	flags    []uint32  // id

	// readVec, when set (View.SetVectorReader), is how rescoring reads a
	// vector: 4·dim bytes at layout offset vecOff+4·dim·id, copied, so
	// the vectors are never touched through the mapping.
	readVec func(off uint64, dst []byte) error
	vecOff  uint64
}

func (g *graph) stride0() int { return 1 + 2*g.m }

// list returns the count slot and the capacity of node id's list on level.
func (g *graph) list(id uint32, level int) []uint32 {
	if level == 0 {
		s := g.stride0()
		o := int(id) * s
		return g.level0[o : o+s : o+s]
	}
	s := g.m + 1
	o := int(g.upperOff[id]) + (level-1)*s
	return g.upper[o : o+s : o+s]
}

// upperList is list for level >= 1 with every bound checked, so a search
// over unverified bytes cannot read out of range; nil when out of range.
func (g *graph) upperList(id uint32, level int) []uint32 {
	if int(id) >= len(g.levels) || int(g.levels[id]) < level {
		return nil
	}
	s := g.m + 1
	o := int(g.upperOff[id]) + (level-1)*s
	if o+s > len(g.upper) {
		return nil
	}
	return g.upper[o : o+s : o+s]
}

func (g *graph) code(id uint32) []int8 {
	o := int(id) * g.dim
	return g.codes[o : o+g.dim : o+g.dim]
}

func (g *graph) vector(id uint32) []float32 {
	o := int(id) * g.dim
	return g.vectors[o : o+g.dim : o+g.dim]
}

// codeDist is the traversal distance between a code and node id's code.
func (g *graph) codeDist(a []int8, id uint32) int32 {
	o := int(id) * g.dim
	b := g.codes[o : o+g.dim : o+g.dim]
	if g.metric == quant.L2 {
		return quant.L2SqInt8(a, b)
	}
	return -quant.DotInt8(a, b)
}

// codeToFloat converts a code distance to the float distance's units.
func (g *graph) codeToFloat(d int32) float32 {
	f := float32(d) * g.quant.Scale * g.quant.Scale
	if g.metric == quant.Cosine {
		return 1 + f
	}
	return f
}

func (g *graph) flag(id uint32) uint32 { return atomic.LoadUint32(&g.flags[id]) }

// Heap keys pack an order-preserving uint32 of the distance above the id,
// so one uint64 compare orders by distance, then id.
func intKey(d int32, id uint32) uint64 { return uint64(uint32(d)^0x80000000)<<32 | uint64(id) }
func keyInt(k uint64) int32            { return int32(uint32(k>>32) ^ 0x80000000) }
func keyID(k uint64) uint32            { return uint32(k) }

func floatKey(f float32, id uint32) uint64 {
	b := math.Float32bits(f)
	if b&0x80000000 != 0 {
		b = ^b
	} else {
		b |= 0x80000000
	}
	return uint64(b)<<32 | uint64(id)
}

func keyFloat(k uint64) float32 {
	b := uint32(k >> 32)
	if b&0x80000000 != 0 {
		b &^= 0x80000000
	} else {
		b = ^b
	}
	return math.Float32frombits(b)
}

// heap is a binary min-heap of keys. A max-heap is the same heap over
// complemented keys (see the res helpers).
type heap []uint64

func (h *heap) push(k uint64) {
	s := append(*h, k)
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p] <= k {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = k
	*h = s
}

func (h *heap) pop() uint64 {
	s := *h
	top := s[0]
	n := len(s) - 1
	last := s[n]
	s = s[:n]
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && s[c+1] < s[c] {
			c++
		}
		if last <= s[c] {
			break
		}
		s[i] = s[c]
		i = c
	}
	if n > 0 {
		s[i] = last
	}
	*h = s
	return top
}

// scratch is one search's reusable state, pooled per index.
type scratch struct {
	marks []uint16 // visited: marks[id] == epoch
	epoch uint16
	cand  heap // min-heap of candidates
	res   heap // max-heap of results, keys complemented
	pool  pool // walkAll's frontier
	qcode []int8
	keys  []uint64
	keys2 []uint64
	ids   []uint32
	batch []uint32
	dists []int32
	out   []uint64   // expandKeys' keys
	fx    expandArgs // expandKeys' arguments during a walk
	// filter statistics of the current walk (accept.scanBelow)
	seen, passed int
	ids2         []uint32
	// salt is XORed into the ids of searchLayer's heap keys, so that
	// among equal distances the order is a per-walk permutation instead
	// of by id (see Index.connect); 0 for queries. sortedResults removes
	// it.
	salt uint32
	// tr, when not nil, records what the search reads (a View with a
	// ReadVerifier); nil for an Index.
	tr *trace
	// vec holds one vector read by graph.readVec; err is the first error
	// a read returned (the search then answers it instead).
	vec []float32
	err error
}

// begin starts a new visited generation for n nodes.
func (s *scratch) begin(n int) {
	if len(s.marks) < n {
		s.marks = make([]uint16, n+n/4)
		s.epoch = 0
	}
	s.epoch++
	if s.epoch == 0 {
		clear(s.marks)
		s.epoch = 1
	}
	s.cand = s.cand[:0]
	s.res = s.res[:0]
}

// visit marks id and reports whether it was unvisited.
func (s *scratch) visit(id uint32) bool {
	if s.marks[id] == s.epoch {
		return false
	}
	s.marks[id] = s.epoch
	return true
}

// accept decides which nodes may enter the result heap.
type accept struct {
	deletes bool     // check tombstones
	bits    []uint64 // a Bitset filter, tested inline
	filter  Filter   // any other filter
	// scanBelow > 0 makes a level-0 walk give up (for a scan) once the
	// share of nodes the filter passed, times live, says it allows at most
	// scanBelow ids: for filters that cannot count themselves.
	scanBelow float64
	live      float64
}

// all reports whether a accepts every node.
func (a *accept) all() bool {
	return !a.deletes && a.bits == nil && a.filter == nil && a.scanBelow == 0
}

func (a *accept) ok(g *graph, id uint32) bool {
	if a.deletes && g.flag(id)&flagDeleted != 0 {
		return false
	}
	if a.bits != nil {
		w := id >> 6
		return int(w) < len(a.bits) && a.bits[w]&(1<<(id&63)) != 0
	}
	if a.filter != nil {
		return a.filter.Allow(id)
	}
	return true
}

// greedy descends one upper level from cur with beam width 1.
func (g *graph) greedy(qc []int8, cur uint32, curD int32, level int, tr *trace) (uint32, int32) {
	for changed := true; changed; {
		changed = false
		if tr != nil {
			tr.upper = append(tr.upper, upperRead{cur, level})
		}
		l := g.upperList(cur, level)
		if l == nil {
			break
		}
		cnt := min(int(atomic.LoadUint32(&l[0])), len(l)-1)
		if cnt > 0 {
			// Every neighbour's code is read below: start all the
			// loads together (1M x 100-d: 3% more queries a second).
			prefetchRows(unsafe.Pointer(&g.codes[0]), l[1:1+cnt], g.dim)
		}
		for i := 1; i <= cnt; i++ {
			nb := atomic.LoadUint32(&l[i])
			if int(nb) >= len(g.flags) {
				continue // only in damaged unverified bytes
			}
			if tr != nil {
				tr.codes = append(tr.codes, nb)
			}
			if d := g.codeDist(qc, nb); d < curD || (d == curD && nb < cur) {
				cur, curD, changed = nb, d, true
			}
		}
	}
	return cur, curD
}

// descend walks greedily from the entry point ep on level top down to
// level (exclusive) and returns the closest node found with its distance.
func (g *graph) descend(qc []int8, ep uint32, top, level int) (uint32, int32) {
	return g.descendTraced(qc, ep, top, level, nil)
}

// descendTraced is descend recording its reads in tr (when not nil).
func (g *graph) descendTraced(qc []int8, ep uint32, top, level int, tr *trace) (uint32, int32) {
	if tr != nil {
		tr.codes = append(tr.codes, ep)
	}
	cur, curD := ep, g.codeDist(qc, ep)
	for l := top; l > level; l-- {
		cur, curD = g.greedy(qc, cur, curD, l, tr)
	}
	return cur, curD
}

// walkWidth is how many nodes a query's walk expands at a time by default
// (DefaultWidth, SearchOptions.Width) and at most; builds expand one. At a
// million nodes a walk waits on memory twice an expansion, for a list and
// then for its neighbours' codes, and the next node to expand is known
// only once the last expansion's distances are in. Expanding the best few
// unexpanded nodes together (a beam width, as DiskANN's beam search has
// for disk reads) loads their lists and then all their neighbours' codes
// at once, so the waits overlap. A node that a one-at-a-time walk would
// not have expanded (it dropped out of the ef best before its turn) is
// rare, and the walk finds the same or slightly better neighbours. In one
// process on a saved graph (bench/cmd/ann -width 1,3,...: medians of
// queries per CPU second), width 3 against 1: 1.22x at 1M x 100-d (ef 60,
// recall@10 0.9655 -> 0.9672), 1.17x on GloVe-100 100k (ef 120), 1.06x
// on GloVe-100 10k, where everything is in cache; width 2 gave 1.15x at
// 1M where 3 gave 1.20x in the same run (and 4, tried with an earlier
// harness, no more than 3).
const walkWidth = 3

// searchLayer is the beam search of width ef on level, from entry ep at
// distance epD, expanding up to width of the best unexpanded nodes at a
// time (see walkWidth; at most walkWidth). The result heap s.res holds up
// to ef accepted nodes (in no particular order when every node is
// accepted: see walkAll). It returns true, with the heaps in no useful
// state, when a.scanBelow says the filter is too selective to walk.
func (g *graph) searchLayer(s *scratch, qc []int8, ep uint32, epD int32, ef, level, width int, a *accept) bool {
	width = max(1, min(width, walkWidth))
	if a.all() {
		g.walkAll(s, qc, ep, epD, ef, level, width)
		return false
	}
	s.begin(len(g.flags))
	s.seen, s.passed = 0, 0
	s.visit(ep)
	salt := s.salt
	s.cand.push(intKey(epD, ep^salt))
	tr := s.tr
	if tr != nil {
		tr.flags = append(tr.flags, ep)
	}
	if a.ok(g, ep) {
		s.res.push(^intKey(epD, ep^salt))
	}
	var idBuf [walkWidth]uint32
	for len(s.cand) > 0 {
		c := s.cand.pop()
		if len(s.res) >= ef && c > ^s.res[0] {
			break
		}
		// The next best candidates that the result heap still admits are
		// expanded with c: the same nodes walkAll's pool holds unexpanded.
		ids := append(idBuf[:0], keyID(c)^salt)
		for len(ids) < width && len(s.cand) > 0 && (len(s.res) < ef || s.cand[0] <= ^s.res[0]) {
			ids = append(ids, keyID(s.cand.pop())^salt)
		}
		// The heap's first keys: the best candidate and its children, one
		// of them the second best; a guess at the nodes expanded next.
		nexts := s.cand[:min(len(s.cand), width)]
		batch, dists := g.expand(s, qc, ids, level, nexts)
		if tr != nil {
			// Flags for a.ok (an over-estimate: a.ok reads only those
			// that may enter the results).
			tr.flags = append(tr.flags, batch...)
		}
		for i, nb := range batch {
			d := dists[i]
			k := intKey(d, nb^salt)
			if len(s.res) < ef || k < ^s.res[0] {
				s.cand.push(k)
				ok := a.ok(g, nb)
				if a.scanBelow > 0 {
					s.seen++
					if ok {
						s.passed++
					}
					if s.seen&255 == 0 && s.seen >= 1024 && float64(s.passed)*a.live <= a.scanBelow*float64(s.seen) {
						return true
					}
				}
				if ok {
					s.res.push(^k)
					if len(s.res) > ef {
						s.res.pop()
					}
				}
			}
		}
	}
	return false
}

// walkAll is searchLayer when every node is accepted, over a pool instead
// of the two heaps; it leaves the pool's keys in s.res, complemented.
func (g *graph) walkAll(s *scratch, qc []int8, ep uint32, epD int32, ef, level, width int) {
	s.begin(len(g.flags))
	s.visit(ep)
	salt := s.salt
	p := &s.pool
	p.reset(ef)
	p.insert(intKey(epD, ep^salt))
	// The fused expansion (expand_amd64.s) also drops the keys the pool
	// would refuse before they reach it; a traced walk records its reads
	// in Go.
	fused := useFusedExpand && s.tr == nil && g.dim > 0
	if fused {
		g.beginFused(s, qc)
		defer s.endFused()
	}
	var idBuf [walkWidth]uint32
	var nextBuf [walkWidth]uint64
	for {
		ids := idBuf[:0]
		for len(ids) < width {
			c, ok := p.pop()
			if !ok {
				break
			}
			ids = append(ids, keyID(c)^salt)
		}
		if len(ids) == 0 {
			break
		}
		nexts := p.peekN(nextBuf[:0], width)
		if fused {
			keys := g.expandKeys(s, ids, level, nexts, p.worst())
			best := ^uint64(0)
			for _, k := range keys {
				p.insert(k)
				best = min(best, k)
			}
			if level == 0 && best != ^uint64(0) && (len(nexts) == 0 || best < nexts[0]) {
				// A new key is the next to expand, not the one whose
				// list expandKeys started loading: load this one's.
				g.prefetchList0(keyID(best) ^ salt)
			}
			continue
		}
		batch, dists := g.expand(s, qc, ids, level, nexts)
		for i, nb := range batch {
			p.insert(intKey(dists[i], nb^salt))
		}
	}
	for _, k := range p.keys {
		s.res = append(s.res, ^k)
	}
}

// expand returns the unvisited neighbours of the nodes ids (at most
// walkWidth) on level, in list order (a neighbour two lists share once),
// marked visited now, with their code distances to qc (both in s's reused
// buffers). It starts loading the level-0 lists of nexts, the salted keys
// of the nodes likely expanded after these.
func (g *graph) expand(s *scratch, qc []int8, ids []uint32, level int, nexts []uint64) ([]uint32, []int32) {
	if level == 0 {
		for _, k := range nexts {
			g.prefetchList0(keyID(k) ^ s.salt)
		}
	}
	tr := s.tr
	total := 0
	for _, id := range ids {
		l := g.list(id, level)
		if len(ids) > 1 {
			prefetchSpan(unsafe.Pointer(&l[0]), 4*len(l))
		}
		total += len(l) - 1
		if tr != nil {
			tr.lists0 = append(tr.lists0, id) // queries walk level 0 only
		}
	}
	// Two passes: collect the unvisited neighbours and prefetch their
	// codes, all in one call, then compute their distances. One call for
	// the batch, not one per neighbour inside the loop: the calls cost
	// more than the earlier start gains while codes come from L3, and
	// the same from DRAM (AMD Zen 5, GloVe-100 100k and 1M x 100-d: 3-10%
	// and 0-5% more queries per CPU second; no prefetch at all was 4-10%
	// faster at 100k but 10% slower at 1M). The unvisited are gathered
	// without a branch on the mark, which would mispredict about every
	// other neighbour (10% faster on GloVe-100 10k). On AVX-512 walkAll
	// runs all of this in one assembly call instead (expandKeys).
	if cap(s.batch) < total {
		s.batch = make([]uint32, 0, total)
	}
	batch := s.batch[:total]
	marks, epoch, n := s.marks, s.epoch, uint32(len(g.flags))
	j := 0
	for _, id := range ids {
		l := g.list(id, level)
		cnt := min(int(atomic.LoadUint32(&l[0])), len(l)-1)
		for i := 1; i <= cnt; i++ {
			nb := atomic.LoadUint32(&l[i])
			if nb >= n {
				continue // only in damaged unverified bytes
			}
			m := marks[nb]
			marks[nb] = epoch
			batch[j] = nb
			if m != epoch {
				j++
			}
		}
	}
	batch = batch[:j]
	if len(batch) > 0 {
		prefetchRows(unsafe.Pointer(&g.codes[0]), batch, g.dim)
	}
	s.batch = batch
	if tr != nil {
		tr.codes = append(tr.codes, batch...)
	}
	return batch, g.batchDistances(s, qc, batch)
}

// prefetchList0 starts loading node id's level-0 list.
func (g *graph) prefetchList0(id uint32) {
	prefetchSpan(unsafe.Pointer(&g.level0[int(id)*g.stride0()]), 4*g.stride0())
}

// sortedResults returns the result heap's keys, without salt, in
// ascending order.
func (s *scratch) sortedResults() []uint64 {
	s.keys = s.keys[:0]
	for _, k := range s.res {
		s.keys = append(s.keys, ^k^uint64(s.salt))
	}
	slices.Sort(s.keys)
	return s.keys
}

// linkKey is the key of node b's distance to node a as the build measures
// it: float distances when floatLinks is set, else code distances. Keys of
// either kind order by their high halves.
func (g *graph) linkKey(a, b uint32) uint64 {
	if g.floatLinks {
		return floatKey(quant.FloatDistance(g.metric, g.vector(a), g.vector(b)), b)
	}
	return intKey(g.codeDist(g.code(a), b), b)
}

// heuristic picks up to max ids from cands (ascending linkKeys to
// the base node): a candidate is kept only if it is closer to the base than
// to every one already kept, which spreads links across directions.
func (g *graph) heuristic(base uint32, cands []uint64, max int, out []uint32) []uint32 {
	out = out[:0]
	if len(cands) <= max {
		for _, c := range cands {
			out = append(out, keyID(c))
		}
		return out
	}
	shuffleTies(base, cands)
	ties := 0
	for _, c := range cands {
		if len(out) >= max {
			break
		}
		id, d := keyID(c), c>>32
		good, dup := true, false
		for _, r := range out {
			pd := g.linkKey(id, r) >> 32
			if pd < d {
				good = false
				break
			}
			// Equal distances are what duplicates look like (continuous
			// data rarely ties), but a candidate also ties with a kept
			// copy of the base itself: only a candidate identical to a
			// kept neighbour is a duplicate.
			dup = dup || (pd == d && g.sameVector(id, r))
		}
		// Cap duplicates at half the list, or a crowd of identical vectors
		// fills every list among them and cuts the distinct points off.
		if good && dup {
			if ties >= max/2 {
				continue
			}
			ties++
		}
		if good {
			out = append(out, id)
		}
	}
	return out
}

// shuffleTies reorders each run of equal distances in cands (sorted keys)
// by a hash of (base, id) instead of by id. Ordered by id, every node
// among identical vectors would keep the same oldest copies and drop the
// newest from every list, leaving it with no in-link at all; a per-base
// order spreads the links like a random graph, which stays connected. It
// is deterministic, so builds still are.
func shuffleTies(base uint32, cands []uint64) {
	for i := 0; i < len(cands); {
		j := i + 1
		for j < len(cands) && cands[j]>>32 == cands[i]>>32 {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(cands[i:j], func(a, b uint64) int {
				return cmp.Compare(tieRank(base, keyID(a)), tieRank(base, keyID(b)))
			})
		}
		i = j
	}
}

// saltOf is the scratch salt of the walks made for node id.
func saltOf(id uint32) uint32 { return uint32(tieRank(id, 0x9e3779b9)) | 1 }

// tieRank is a 64-bit mix (splitmix64's finalizer) of a node pair.
func tieRank(base, id uint32) uint64 {
	x := uint64(base)<<32 | uint64(id)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// sameVector reports whether nodes a and b hold identical vectors (codes
// when the build links by code distance). It compares bytes (memequal's
// SIMD loop, several times faster than comparing floats one by one): in a
// crowd of copies this runs for every candidate, and the only floats that
// are equal with different bytes, 0 and -0, merely count as distinct.
func (g *graph) sameVector(a, b uint32) bool {
	if g.floatLinks {
		return bytes.Equal(asBytes(g.vector(a)), asBytes(g.vector(b)))
	}
	return bytes.Equal(asBytes(g.code(a)), asBytes(g.code(b)))
}

// search runs a query (already prepared: right length, normalized under
// Cosine) from the entry point and returns the best k.
func (g *graph) search(s *scratch, q []float32, k, ef, width, n int, ep uint32, top int, a *accept, rescore bool) []Result {
	qc := s.encode(g, q)
	cur, curD := g.descendTraced(qc, ep, top, 0, s.tr)
	if g.searchLayer(s, qc, cur, curD, ef, 0, width, a) {
		return g.scan(s, q, k, n, a, rescore)
	}
	return g.finish(s, q, k, rescore)
}

// encode returns q's code in the scratch buffer.
func (s *scratch) encode(g *graph, q []float32) []int8 {
	if cap(s.qcode) < g.dim {
		s.qcode = make([]int8, g.dim)
	}
	qc := s.qcode[:g.dim]
	g.quant.Encode(qc, q)
	return qc
}

// finish turns the result heap into the best k results, rescoring the best
// candidates with float distances when rescore is set.
func (g *graph) finish(s *scratch, q []float32, k int, rescore bool) []Result {
	keys := s.sortedResults()
	if rescore && g.readVec != nil {
		keys = keys[:min(len(keys), rescoreCount(k))]
		if cap(s.vec) < g.dim {
			s.vec = make([]float32, g.dim)
		}
		v := s.vec[:g.dim]
		for i, key := range keys {
			id := keyID(key)
			if err := g.readVec(g.vecOff+4*uint64(g.dim)*uint64(id), asBytes(v)); err != nil {
				s.err = err
				return nil
			}
			keys[i] = floatKey(quant.FloatDistance(g.metric, q, v), id)
		}
		slices.Sort(keys)
	} else if rescore {
		// Code order is close to float order: rescoring the best
		// rescoreCount(k) keeps recall (measured on GloVe-100 and SIFT)
		// and skips most of the float vectors' cache misses.
		keys = keys[:min(len(keys), rescoreCount(k))]
		for _, key := range keys {
			o := int(keyID(key)) * g.dim
			for j := 0; j < g.dim; j += 16 {
				prefetchF32(&g.vectors[o+j])
			}
		}
		for i, key := range keys {
			id := keyID(key)
			if s.tr != nil {
				s.tr.vectors = append(s.tr.vectors, id)
			}
			keys[i] = floatKey(quant.FloatDistance(g.metric, q, g.vector(id)), id)
		}
		slices.Sort(keys)
	}
	out := make([]Result, 0, min(k, len(keys)))
	for _, key := range keys[:min(k, len(keys))] {
		d := keyFloat(key)
		if !rescore {
			d = g.codeToFloat(keyInt(key))
		}
		out = append(out, Result{ID: keyID(key), Distance: d})
	}
	return out
}

// scan computes the code distance of every accepted node among the first
// n, in batches, keeps the best rescoreCount(k) and finishes like search.
// It serves filters that allow too few nodes for a graph walk to find them.
func (g *graph) scan(s *scratch, q []float32, k, n int, a *accept, rescore bool) []Result {
	qc := s.encode(g, q)
	s.res = s.res[:0]
	keep := k
	if rescore {
		keep = rescoreCount(k)
	}
	const batchSize = 256
	batch := s.batch[:0]
	if cap(s.dists) < batchSize {
		s.dists = make([]int32, batchSize)
	}
	flush := func() {
		if s.tr != nil {
			s.tr.codes = append(s.tr.codes, batch...)
		}
		dists := s.dists[:len(batch)]
		// A few codes at a time, the next few prefetched whole meanwhile:
		// a session's codes are scattered, so nothing else loads them
		// ahead and each would be a row of cache misses.
		const group = 8
		g.prefetchCodes(batch[:min(group, len(batch))])
		for lo := 0; lo < len(batch); lo += group {
			hi := min(lo+group, len(batch))
			g.prefetchCodes(batch[hi:min(hi+group, len(batch))])
			if quant.CodeDistances(g.metric, dists[lo:hi], qc, g.codes, batch[lo:hi]) != nil {
				for i, id := range batch[lo:hi] { // unreachable: ids < n
					dists[lo+i] = g.codeDist(qc, id)
				}
			}
		}
		for i, id := range batch {
			key := intKey(dists[i], id)
			if len(s.res) < keep {
				s.res.push(^key)
			} else if key < ^s.res[0] {
				s.res.pop()
				s.res.push(^key)
			}
		}
		batch = batch[:0]
	}
	consider := func(id uint32) {
		if s.tr != nil {
			s.tr.flags = append(s.tr.flags, id)
		}
		if f := g.flag(id); f&flagPresent == 0 || f&flagDeleted != 0 {
			return
		}
		if batch = append(batch, id); len(batch) == batchSize {
			flush()
		}
	}
	if a.bits != nil {
		for w, word := range a.bits {
			for word != 0 {
				id := w*64 + bitsTrailing(word)
				if id >= n {
					break
				}
				consider(uint32(id))
				word &= word - 1
			}
		}
	} else {
		for id := 0; id < n; id++ {
			if a.filter == nil || a.filter.Allow(uint32(id)) {
				consider(uint32(id))
			}
		}
	}
	flush()
	s.batch = batch
	return g.finish(s, q, k, rescore)
}

// prefetchCodes asks the CPU to load every cache line of the codes of ids.
func (g *graph) prefetchCodes(ids []uint32) {
	for _, id := range ids {
		prefetchSpan(unsafe.Pointer(&g.codes[int(id)*g.dim]), g.dim)
	}
}

// rescoreCount is how many of the best code candidates are rescored: k
// and a margin of k, at least 30. The code order departs from the float
// order by a few ranks, so the margin need not grow past k: at 1M x
// 1024-d, k = 100, session filters of 0.01% to 10% and none, rescoring 2k
// found exactly the recall@10 and recall@100 that 4k found (1.000 and
// 0.823-1.000), in about half the time (each rescored vector is a 4 KiB
// read); rescoring k alone lost some (recall@100 0.996-0.998).
func rescoreCount(k int) int { return k + max(k, 30) }

// batchDistances returns the int8 code distances of qc to every id of
// batch, in s's reused buffer.
func (g *graph) batchDistances(s *scratch, qc []int8, batch []uint32) []int32 {
	dists := s.dists[:0]
	if cap(dists) < len(batch) {
		dists = make([]int32, len(batch), 2*len(batch))
	}
	dists = dists[:len(batch)]
	s.dists = dists
	if quant.CodeDistances(g.metric, dists, qc, g.codes, batch) != nil {
		for i, nb := range batch { // unreachable: ids were bounds-checked
			dists[i] = g.codeDist(qc, nb)
		}
	}
	return dists
}
