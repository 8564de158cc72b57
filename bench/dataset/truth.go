package dataset

import (
	"container/heap"
	"runtime"
	"sync"

	"github.com/engramdb/engram/quant"
)

// neighbor is a candidate of the exact search.
type neighbor struct {
	id   int32
	dist float32
}

// worse orders neighbours: larger distance, then larger id, is worse, so
// ties go to the smaller id as in the shared ground-truth files.
func worse(a, b neighbor) bool {
	if a.dist != b.dist {
		return a.dist > b.dist
	}
	return a.id > b.id
}

// maxHeap keeps the k best candidates with the worst on top.
type maxHeap []neighbor

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(neighbor)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *maxHeap) offer(n neighbor, k int) {
	if len(*h) < k {
		heap.Push(h, n)
	} else if worse((*h)[0], n) {
		(*h)[0] = n
		heap.Fix(h, 0)
	}
}

// sorted empties h into ids, nearest first.
func (h *maxHeap) sorted() []int32 {
	ids := make([]int32, len(*h))
	for i := len(ids) - 1; i >= 0; i-- {
		ids[i] = heap.Pop(h).(neighbor).id
	}
	return ids
}

// GroundTruth computes the exact k nearest base vectors of every query
// under m by brute force with the quant float kernels, on threads
// goroutines (GOMAXPROCS if threads <= 0). For Cosine the vectors need not
// be normalized: normalized copies are used. Base vectors are scanned in
// blocks that stay in cache while every query of a worker visits them.
func GroundTruth(base, queries *Vectors, m quant.Metric, k, threads int) [][]int32 {
	if m == quant.Cosine {
		base, queries = Normalized(base), Normalized(queries)
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	nq := queries.Len()
	heaps := make([]maxHeap, nq)
	const block = 256
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			// Each worker owns a contiguous range of queries.
			lo, hi := t*nq/threads, (t+1)*nq/threads
			for b0 := 0; b0 < base.Len(); b0 += block {
				b1 := min(b0+block, base.Len())
				for q := lo; q < hi; q++ {
					qv := queries.Row(q)
					h := &heaps[q]
					for i := b0; i < b1; i++ {
						h.offer(neighbor{int32(i), quant.FloatDistance(m, qv, base.Row(i))}, k)
					}
				}
			}
		}(t)
	}
	wg.Wait()
	out := make([][]int32, nq)
	for q := range heaps {
		out[q] = heaps[q].sorted()
	}
	return out
}
