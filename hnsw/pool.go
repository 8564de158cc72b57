package hnsw

import "math/bits"

// pool is a walk's frontier when every node it visits may be a result (no
// filter, no tombstones): the ef best keys found so far in one sorted
// array, each marked once expanded. It replaces the candidate and result
// heaps of the general walk: a key worse than the ef-th best would never
// be expanded there either, so the walk is the same, but one insertion (a
// binary search and a short move) costs less than the two heaps' pushes
// and pops with their unpredictable branches.
type pool struct {
	keys []uint64 // ascending
	done []bool   // keys[i] was expanded
	ef   int
	cur  int // no unexpanded key before cur
}

func (p *pool) reset(ef int) {
	if cap(p.keys) < ef+1 {
		p.keys = make([]uint64, 0, ef+1)
		p.done = make([]bool, 0, ef+1)
	}
	p.keys, p.done = p.keys[:0], p.done[:0]
	p.ef, p.cur = ef, 0
}

// insert adds k unless the pool is full of better keys.
func (p *pool) insert(k uint64) {
	n := len(p.keys)
	if n >= p.ef {
		if k >= p.keys[n-1] {
			return
		}
		n-- // the worst key drops out
	}
	// Branch-free lower bound (the comparisons are coin flips, which a
	// branch would mispredict half the time): base ends on the last key
	// below k, or 0.
	lo := 0
	if n > 0 {
		base := 0
		for size := n; size > 1; size -= size >> 1 {
			half := size >> 1
			_, below := bits.Sub64(p.keys[base+half], k, 0) // 1 when less
			base += half * int(below)
		}
		lo = base
		if p.keys[base] < k {
			lo++
		}
	}
	p.keys, p.done = p.keys[:n+1], p.done[:n+1]
	copy(p.keys[lo+1:], p.keys[lo:n])
	copy(p.done[lo+1:], p.done[lo:n])
	p.keys[lo], p.done[lo] = k, false
	if lo < p.cur {
		p.cur = lo
	}
}

// worst is the key a new key must be below to enter: the worst kept
// once the pool is full, else above every key.
func (p *pool) worst() uint64 {
	if n := len(p.keys); n >= p.ef {
		return p.keys[n-1]
	}
	return ^uint64(0)
}

// pop marks the best unexpanded key expanded and returns it; false when
// every key was expanded (the walk is over).
func (p *pool) pop() (uint64, bool) {
	i := p.cur
	for i < len(p.keys) && p.done[i] {
		i++
	}
	if i == len(p.keys) {
		p.cur = i
		return 0, false
	}
	p.done[i] = true
	p.cur = i + 1
	return p.keys[i], true
}

// peek returns the best unexpanded key without expanding it.
func (p *pool) peek() (uint64, bool) {
	for i := p.cur; i < len(p.keys); i++ {
		if !p.done[i] {
			return p.keys[i], true
		}
	}
	return 0, false
}
