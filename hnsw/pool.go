package hnsw

import (
	"math/bits"
	"unsafe"
)

// pool is a walk's frontier when every node it visits may be a result (no
// filter, no tombstones): the ef best keys found so far in one sorted
// array, each marked once expanded. It replaces the candidate and result
// heaps of the general walk: a key worse than the ef-th best would never
// be expanded there either, so the walk is the same, but one insertion (a
// search and a short move) costs less than the two heaps' pushes and pops
// with their unpredictable branches. The expanded marks are bits, so an
// insertion moves one array, not two; on AVX-512 it is one assembly call
// (insertSortedAVX512, 18% more queries a second on GloVe-100 100k than
// a binary search and memmove).
type pool struct {
	keys []uint64 // ascending, capacity ef+1
	done []uint64 // bit i: keys[i] was expanded
	ef   int
	cur  int // no unexpanded key before cur
}

func (p *pool) reset(ef int) {
	if cap(p.keys) < ef+1 {
		p.keys = make([]uint64, 0, ef+1)
	}
	words := (ef + 1 + 63) / 64
	if cap(p.done) < words {
		p.done = make([]uint64, words)
	}
	p.keys, p.done = p.keys[:0], p.done[:words]
	clear(p.done)
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
	var lo int
	if useInsertAsm {
		lo = insertSortedAVX512(unsafe.SliceData(p.keys), n, k)
		p.keys = p.keys[:n+1]
	} else {
		lo = lowerBound(p.keys[:n], k)
		p.keys = p.keys[:n+1]
		copy(p.keys[lo+1:], p.keys[lo:n])
		p.keys[lo] = k
	}
	// The done bits from lo up move up one with their keys; lo's is clear.
	d := p.done
	w, b := lo>>6, uint(lo&63)
	carry := d[w] >> 63
	below := uint64(1)<<b - 1
	d[w] = d[w]&below | (d[w]&^below)<<1
	for i := w + 1; i < len(d); i++ {
		d[i], carry = d[i]<<1|carry, d[i]>>63
	}
	if lo < p.cur {
		p.cur = lo
	}
}

// lowerBound is the number of keys below k in the ascending keys, found
// without a branch on the comparisons (coin flips, which a branch would
// mispredict half the time).
func lowerBound(keys []uint64, k uint64) int {
	n := len(keys)
	if n == 0 {
		return 0
	}
	base := 0
	for size := n; size > 1; size -= size >> 1 {
		half := size >> 1
		_, below := bits.Sub64(keys[base+half], k, 0) // 1 when less
		base += half * int(below)
	}
	if keys[base] < k {
		base++
	}
	return base
}

// worst is the key a new key must be below to enter: the worst kept
// once the pool is full, else above every key.
func (p *pool) worst() uint64 {
	if n := len(p.keys); n >= p.ef {
		return p.keys[n-1]
	}
	return ^uint64(0)
}

// next returns the position of the best unexpanded key, len(keys) if
// every key was expanded.
func (p *pool) next() int {
	n := len(p.keys)
	for w := p.cur >> 6; w<<6 < n; w++ {
		open := ^p.done[w]
		if w == p.cur>>6 {
			open &= ^uint64(0) << uint(p.cur&63)
		}
		if open != 0 {
			return min(w<<6+bits.TrailingZeros64(open), n)
		}
	}
	return n
}

// pop marks the best unexpanded key expanded and returns it; false when
// every key was expanded (the walk is over).
func (p *pool) pop() (uint64, bool) {
	i := p.next()
	if i == len(p.keys) {
		p.cur = i
		return 0, false
	}
	p.done[i>>6] |= 1 << uint(i&63)
	p.cur = i + 1
	return p.keys[i], true
}

// peekN appends up to n of the best unexpanded keys, best first, to dst
// without expanding them.
func (p *pool) peekN(dst []uint64, n int) []uint64 {
	for i := p.next(); i < len(p.keys) && len(dst) < n; i++ {
		if p.done[i>>6]&(1<<uint(i&63)) == 0 {
			dst = append(dst, p.keys[i])
		}
	}
	return dst
}
