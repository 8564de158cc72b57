package hnsw

import (
	"runtime"
	"sync"
)

// kept keeps values a search needs between searches of one Index or View:
// their scratch (visited marks, heaps, pools) and their read traces.
// Unlike a sync.Pool it survives garbage collections. A scratch's visited
// marks take two bytes a node (2.5 MB at 1M nodes), and one that a
// collection dropped made the next search allocate them again and fault in
// each fresh 4 KiB page it marked: at 1M x 1024-d on a 2-core virtual
// machine, hundreds of minor faults and 3-9 ms added to a filtered search
// that otherwise takes 1-2 ms (bench/results/scale-1m.md, eighth
// measurement). It keeps as many as have been in use at once, up to
// maxKept.
type kept[T any] struct {
	mu   sync.Mutex
	free []*T
}

// maxKept bounds the values kept: two per CPU the runtime runs on, at
// least four.
func maxKept() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// get returns a kept value, the last one put back first (the likeliest to
// be in cache), or a new one.
func (p *kept[T]) get() *T {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		x := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return x
	}
	p.mu.Unlock()
	return new(T)
}

// put keeps x for a later get, unless maxKept are kept already.
func (p *kept[T]) put(x *T) {
	p.mu.Lock()
	if len(p.free) < maxKept() {
		p.free = append(p.free, x)
	}
	p.mu.Unlock()
}

// reserve makes sure n scratches are kept with visited marks for nodes
// ids, their pages written, so that the first n searches at once do not
// fault the marks in page by page (see View.Reserve).
func reserve(p *kept[scratch], n, nodes int) {
	n = min(n, maxKept())
	var got []*scratch
	for range n {
		got = append(got, p.get())
	}
	for _, s := range got {
		if len(s.marks) < nodes {
			s.marks = make([]uint16, nodes)
			clear(s.marks) // fresh pages: write each one now
			s.epoch = 0
		}
		p.put(s)
	}
}
