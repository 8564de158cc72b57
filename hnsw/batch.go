package hnsw

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// InsertBatch adds vecs and returns their ids, in order, linking them from
// up to workers goroutines at once: a parallel build like hnswlib's, whose
// graph is as good but not the same from run to run. The vectors of a
// self-trained quantizer's first TrainSize go in one by one, as Insert
// takes them. Every vector is validated first: with one invalid, nothing
// is inserted. The ids are consecutive unless other inserts run meanwhile.
func (ix *Index) InsertBatch(vecs [][]float32, workers int) ([]uint32, error) {
	prepared := make([][]float32, len(vecs))
	for i, v := range vecs {
		p, err := prepare(v, ix.cfg.Dim, ix.cfg.Metric)
		if err != nil {
			return nil, fmt.Errorf("vector %d: %w", i, err)
		}
		prepared[i] = p
	}
	ids := make([]uint32, 0, len(vecs))
	for len(ids) < len(prepared) && (workers <= 1 || ix.ownQuant && int(ix.n.Load()) < ix.cfg.TrainSize) {
		id, err := ix.Insert(prepared[len(ids)])
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	rest := prepared[len(ids):]
	if len(rest) == 0 {
		return ids, nil
	}
	levels := make([]int, len(rest))
	upper := 0
	for i := range levels {
		levels[i] = ix.drawLevel()
		upper += levels[i] * (ix.cfg.M + 1)
	}
	// Room for all of them first, so the allocations below cannot fail
	// for space and the ids follow the order of vecs.
	ix.mu.Lock()
	ix.growLocked(int(ix.n.Load())+len(rest), ix.upperUsed+upper)
	ix.mu.Unlock()
	ix.mu.RLock()
	first := len(ids)
	var allocErr error
	for i, v := range rest {
		id, err := ix.alloc(v, levels[i])
		for errors.Is(err, errFull) { // another insert took the room
			ix.mu.RUnlock()
			ix.grow(levels[i])
			ix.mu.RLock()
			id, err = ix.alloc(v, levels[i])
		}
		if err != nil {
			allocErr = err // link what was allocated, then say so
			break
		}
		ids = append(ids, id)
	}
	ix.mu.RUnlock()
	rest = rest[:len(ids)-first]
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(rest)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(rest) {
					return
				}
				ix.mu.RLock()
				ix.connect(ids[first+i], levels[i])
				ix.mu.RUnlock()
			}
		})
	}
	wg.Wait()
	return ids, allocErr
}
