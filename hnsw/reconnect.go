package hnsw

import "slices"

// reconnectRounds bounds the passes of reconnect: adopting a node may
// replace another link, and a later walk checks nothing was cut by it.
const reconnectRounds = 4

// reconnect makes every live node reachable from the entry point over
// level-0 lists, the walk every search ends with; nodes it cannot reach
// can never be returned. The heuristic and the re-pruning of full lists
// leave such nodes now and then (a node every neighbour dropped for a
// closer one, hubs under Dot, deletes racing inserts), so Repair and
// WriteTo run this: each unreached node is searched for from the entry
// point and linked from the nearest reached node that has a free slot, or
// in place of a link to a node that others link to as well. It returns how
// many nodes it linked. The caller holds mu's write side.
func (ix *Index) reconnect(s *scratch) int {
	g := &ix.g
	e := ix.ep.Load()
	if e == 0 {
		return 0
	}
	ep, top := unpackEP(e)
	n := int(ix.n.Load())
	live := func(id uint32) bool { return g.flags[id]&(flagPresent|flagDeleted) == flagPresent }
	adopted := 0
	for round := 0; round < reconnectRounds; round++ {
		reached := make([]uint64, (n+63)/64)
		g.reach(reached, ep, s)
		indeg := g.inDegrees(n, reached)
		var recent []uint32
		missing := false
		for x := uint32(0); int(x) < n; x++ {
			if !live(x) || has(reached, x) {
				continue
			}
			missing = true
			ix.adopt(s, x, ep, top, reached, indeg, recent)
			if recent = append(recent, x); len(recent) > adoptCandidates {
				recent = recent[1:]
			}
			adopted++
			g.reach(reached, x, s)
		}
		if !missing {
			break
		}
	}
	return adopted
}

func has(bits []uint64, id uint32) bool { return bits[id>>6]&(1<<(id&63)) != 0 }

// reach marks in bits every node reachable from start over level-0 lists
// (tombstones included: searches walk them) that bits does not hold yet.
func (g *graph) reach(bits []uint64, start uint32, s *scratch) {
	if has(bits, start) {
		return
	}
	bits[start>>6] |= 1 << (start & 63)
	queue := append(s.ids[:0], start)
	for len(queue) > 0 {
		u := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		l := g.list(u, 0)
		for _, nb := range l[1 : 1+l[0]] {
			if !has(bits, nb) {
				bits[nb>>6] |= 1 << (nb & 63)
				queue = append(queue, nb)
			}
		}
	}
	s.ids = queue
}

// inDegrees counts each node's level-0 in-links from the nodes in from
// (links from unreached nodes keep nothing reachable).
func (g *graph) inDegrees(n int, from []uint64) []int32 {
	indeg := make([]int32, n)
	for u := uint32(0); int(u) < n; u++ {
		if !has(from, u) {
			continue
		}
		l := g.list(u, 0)
		for _, nb := range l[1 : 1+l[0]] {
			indeg[nb]++
		}
	}
	return indeg
}

// adoptCandidates is how many of the nearest reached nodes adopt tries.
const adoptCandidates = 8

// adopt links the unreached node x from a reached live node near it: the
// nearest of the first adoptCandidates with a free slot on level 0, else
// the nearest with a neighbour that has another in-link, which x replaces
// (the one with the most), else the nearest, in place of its last link.
// The candidates are the search's results and the nodes adopted just
// before x (recent): in a crowd of identical vectors every search returns
// the same oldest copies, whose lists are full, while the copies adopted
// before x are as near and have room, so the crowd is linked as a chain.
func (ix *Index) adopt(s *scratch, x, ep uint32, top int, reached []uint64, indeg []int32, recent []uint32) {
	g := &ix.g
	qc := g.code(x)
	acc := accept{deletes: true, bits: reached}
	cur, curD := g.descend(qc, ep, top, 0)
	g.searchLayer(s, qc, cur, curD, ix.cfg.EfConstruction, 0, 1, &acc)
	if len(s.res) == 0 && cur != ep {
		// The descent ended in a part of the graph that does not lead
		// back to reached nodes: start from the entry point itself.
		g.searchLayer(s, qc, ep, g.codeDist(qc, ep), ix.cfg.EfConstruction, 0, 1, &acc)
	}
	cands := s.sortedResults()
	cands = cands[:min(len(cands), adoptCandidates)]
	for _, id := range recent {
		if !slices.ContainsFunc(cands, func(k uint64) bool { return keyID(k) == id }) {
			cands = append(cands, intKey(g.codeDist(qc, id), id))
		}
	}
	slices.Sort(cands)
	targets := make([]uint32, 0, len(cands)+1)
	for _, k := range cands {
		if id := keyID(k); id != x {
			targets = append(targets, id)
		}
	}
	if len(targets) == 0 {
		targets = append(targets, ep) // reached by definition
	}
	c := ix.capAt(0)
	for _, t := range targets {
		if l := g.list(t, 0); int(l[0]) < c {
			writeList(l, append(slices.Clone(l[1:1+l[0]]), x))
			indeg[x]++
			return
		}
	}
	for _, t := range targets {
		l := g.list(t, 0)
		best := -1
		for i, nb := range l[1 : 1+l[0]] {
			if indeg[nb] > 1 && (best < 0 || indeg[nb] >= indeg[l[1+best]]) {
				best = i
			}
		}
		if best >= 0 {
			indeg[l[1+best]]--
			l[1+best] = x
			indeg[x]++
			return
		}
	}
	l := g.list(targets[0], 0)
	if l[0] == 0 {
		writeList(l, []uint32{x})
	} else {
		indeg[l[l[0]]]--
		l[l[0]] = x
	}
	indeg[x]++
}
