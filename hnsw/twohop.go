package hnsw

import (
	"math/bits"
	"sync/atomic"
)

// The two-hop filtered walk (ACORN-1, Patel et al., SIGMOD 2024, without
// its denser build): the candidate queue and the result heap hold allowed
// nodes only, and expanding a node gathers its allowed neighbours plus the
// allowed neighbours of its disallowed ones. A plain filtered walk either
// keeps to allowed nodes (and strands itself when few of a node's links are
// allowed) or walks every node (about ef/selectivity of them, each with its
// code distance); the two-hop walk computes distances for allowed nodes
// only, and reads the lists of disallowed neighbours (a bit test each) to
// bridge the gaps between allowed ones. See the package doc's Filters
// section for when the planner uses it.

// twoHopSeeds is how many allowed ids, spread over the filter's set, are
// added as extra starting points. The descent ends near the query, where
// a filter correlated with something other than the query (one user's
// memories about other topics) may allow nothing within two hops; seeds
// start walks inside the allowed set wherever it lies. Seeds farther than
// the final results are never expanded, so they cost one distance each.
const twoHopSeeds = 16

// twoHopRoots is the beam width (at most ef) of the unfiltered walk that
// finds the two-hop walk's roots.
const twoHopRoots = 32

// twoHopThird: an expansion whose two hops gathered fewer allowed nodes
// takes a third hop through up to a list's worth of second-hop nodes.
const twoHopThird = 8

// searchTwoHop runs a two-hop filtered query (q prepared) from the entry
// point ep on level top and returns the best k. a.bits or a.filter decides
// what is allowed; count is how many ids the filter allows (for seeding).
func (g *graph) searchTwoHop(s *scratch, q []float32, k, ef, n int, ep uint32, top int, a *accept, count int, rescore bool) []Result {
	qc := s.encode(g, q)
	cur, curD := g.descendTraced(qc, ep, top, 0, s.tr)
	// Roots: the query's nearest nodes whatever the filter, from a short
	// unfiltered walk. Two hops from the greedy entry alone miss allowed
	// nodes that sit near the query but away from the rest of the allowed
	// set (a user's one memory on a topic); two hops from each of the
	// nearest few reach them.
	g.searchLayer(s, qc, cur, curD, min(ef, twoHopRoots), 0, walkWidth, &accept{})
	roots := append(s.keys2[:0], s.res...)
	s.keys2 = roots
	s.begin(len(g.flags))
	tr := s.tr
	// Roots are expanded even when the filter disallows them: they are
	// where the walk starts, not results.
	for _, r := range roots {
		key := ^r
		id := keyID(key)
		s.visit(id)
		s.cand.push(key)
		if g.allowed(s, a, id) {
			s.res.push(^key)
		}
	}
	batch := g.twoHopSeeds(s, a, count, n)
	g.twoHopScore(s, qc, batch, ef, true)

	// Gather at most a full level-0 list of allowed nodes per expansion:
	// past that the extra two-hop reads rarely change the path (ACORN
	// truncates its expanded lists the same way).
	limit := g.stride0() - 1
	for len(s.cand) > 0 {
		c := s.cand.pop()
		if len(s.res) >= ef && c > ^s.res[0] {
			break
		}
		cid := keyID(c)
		if tr != nil {
			tr.lists0 = append(tr.lists0, cid)
		}
		l := g.list(cid, 0)
		cnt := min(int(atomic.LoadUint32(&l[0])), len(l)-1)
		batch = s.batch[:0]
		hops := s.ids2[:0]
		// First hop: allowed neighbours are scored, disallowed ones are
		// bridged through below (their lists prefetched now).
		for i := 1; i <= cnt; i++ {
			nb := atomic.LoadUint32(&l[i])
			if int(nb) >= len(g.flags) || !s.visit(nb) {
				continue
			}
			if g.allowed(s, a, nb) {
				if len(batch) < limit {
					batch = append(batch, nb)
				} else {
					// Over the limit: leave it unvisited for a later
					// expansion to gather.
					s.marks[nb] = s.epoch - 1
				}
				continue
			}
			if len(hops) < g.m {
				prefetchU32(&g.level0[int(nb)*g.stride0()])
				hops = append(hops, nb)
			}
		}
		// Second hop, in list order (closest links first). Disallowed
		// second-hop nodes are kept for a third hop.
		far := s.ids[:0]
		for _, h := range hops {
			if len(batch) >= limit {
				break
			}
			if tr != nil {
				tr.lists0 = append(tr.lists0, h)
			}
			l2 := g.list(h, 0)
			cnt2 := min(int(atomic.LoadUint32(&l2[0])), len(l2)-1)
			for i := 1; i <= cnt2 && len(batch) < limit; i++ {
				nb := atomic.LoadUint32(&l2[i])
				if int(nb) >= len(g.flags) || s.marks[nb] == s.epoch {
					continue
				}
				// A disallowed second-hop node stays unvisited: it may
				// still be bridged through as a first-hop neighbour of
				// a later candidate.
				if g.allowed(s, a, nb) {
					s.marks[nb] = s.epoch
					batch = append(batch, nb)
				} else if len(far) < limit {
					far = append(far, nb)
				}
			}
		}
		// Third hop, only when two found almost nothing: an allowed node
		// with no allowed node within two hops of it would otherwise end
		// its walk there.
		if len(batch) < twoHopThird {
			for _, h := range far {
				if len(batch) >= limit {
					break
				}
				if s.marks[h] == s.epoch {
					continue
				}
				s.marks[h] = s.epoch
				if tr != nil {
					tr.lists0 = append(tr.lists0, h)
				}
				l3 := g.list(h, 0)
				cnt3 := min(int(atomic.LoadUint32(&l3[0])), len(l3)-1)
				for i := 1; i <= cnt3 && len(batch) < limit; i++ {
					nb := atomic.LoadUint32(&l3[i])
					if int(nb) >= len(g.flags) || s.marks[nb] == s.epoch {
						continue
					}
					if g.allowed(s, a, nb) {
						s.marks[nb] = s.epoch
						batch = append(batch, nb)
					}
				}
			}
		}
		s.ids, s.ids2 = far, hops
		g.twoHopScore(s, qc, batch, ef, false)
	}
	return g.finish(s, q, k, rescore)
}

// allowed is a.ok recording the flag read in the trace.
func (g *graph) allowed(s *scratch, a *accept, id uint32) bool {
	if s.tr != nil && a.deletes {
		s.tr.flags = append(s.tr.flags, id)
	}
	return a.ok(g, id)
}

// twoHopScore computes the code distances of batch (allowed nodes) and
// offers each to the queue and the results. Seeds always enter the
// queue, so a walk starts from each even once ef results are held.
func (g *graph) twoHopScore(s *scratch, qc []int8, batch []uint32, ef int, seeds bool) {
	s.batch = batch
	if len(batch) == 0 {
		return
	}
	g.prefetchCodes(batch)
	if s.tr != nil {
		s.tr.codes = append(s.tr.codes, batch...)
	}
	dists := g.batchDistances(s, qc, batch)
	for i, nb := range batch {
		key := intKey(dists[i], nb)
		if seeds || len(s.res) < ef || key < ^s.res[0] {
			s.cand.push(key)
			s.res.push(^key)
			if len(s.res) > ef {
				s.res.pop()
			}
		}
	}
}

// twoHopSeeds puts up to twoHopSeeds allowed, live, unvisited ids below n,
// evenly spaced through the filter's set, into s.batch (marked visited).
// Only a Bitset can be sampled without a pass over every id; other filters
// get no seeds.
func (g *graph) twoHopSeeds(s *scratch, a *accept, count, n int) []uint32 {
	batch := s.batch[:0]
	if a.bits == nil || count <= 0 {
		return batch
	}
	want := min(twoHopSeeds, count)
	stride := count / want
	next, seen := 0, 0 // rank of the next seed among the set ids, ranks passed
	for w, word := range a.bits {
		c := bits.OnesCount64(word)
		for c > 0 && next < seen+c && len(batch) < want {
			// The (next-seen)th set bit of word.
			x := word
			for range next - seen {
				x &= x - 1
			}
			id := w*64 + bits.TrailingZeros64(x)
			if id >= n {
				s.batch = batch
				return batch
			}
			if g.allowed(s, a, uint32(id)) && s.visit(uint32(id)) {
				batch = append(batch, uint32(id))
			}
			next += stride
		}
		seen += c
		if len(batch) >= want {
			break
		}
	}
	s.batch = batch
	return batch
}
