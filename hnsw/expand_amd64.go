//go:build !purego

package hnsw

import (
	"sync/atomic"
	"unsafe"

	"github.com/engramdb/engram/quant"
	"golang.org/x/sys/cpu"
)

// useFusedExpand: the CPU runs expandAVX512 (VNNI for VPDPBUSD, BW for the
// byte masks). Tests turn it off to compare with the portable expansion.
var useFusedExpand = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI

// expandArgs is expandAVX512's input, by field offsets (go_asm.h).
type expandArgs struct {
	lists   [walkWidth]*uint32 // the expanded nodes' lists (slot 0: the count)
	nl      uint64             // how many
	maxCnt  uint64             // a list's slots: a count above is damaged bytes
	nexts   [walkWidth]*uint32 // level-0 lists to start loading
	nn      uint64             // how many
	listLen uint64             // the bytes of a list, to prefetch
	marks   *uint16            // visited marks, n of them
	epoch   uint64             // the current mark (low 16 bits)
	n       uint64             // ids at or past n are skipped (damaged bytes)
	codes   *int8              // n*dim codes
	q       *int8              // the query's code, dim bytes
	dim     uint64
	ids     *uint32 // scratch for the gathered ids
	keys    *uint64 // out: a key for each gathered id at most
	worst   uint64  // keep keys below this
	salt    uint64  // XORed into the ids of the keys
	l2      uint64  // 1: squared L2 distances, 0: negated dot products
	qcorr   uint64  // 128·sum(q) as an int32: the dot kernel's offset
}

//go:noescape
func expandAVX512(a *expandArgs) int

// beginFused readies s.fx, expandAVX512's arguments, for a walk of g with
// query code qc: what stays the same from one expansion to the next is set
// once (an expansion is a few hundred nanoseconds; filling all the
// arguments each time cost a tenth of a walk). endFused drops its pointers
// again, so that a pooled scratch does not keep arrays alive.
func (g *graph) beginFused(s *scratch, qc []int8) {
	if c := walkWidth * (2*g.m + 1); cap(s.batch) < c || cap(s.out) < c {
		s.batch, s.out = make([]uint32, 0, c), make([]uint64, 0, c)
	}
	s.fx = expandArgs{
		marks: unsafe.SliceData(s.marks),
		epoch: uint64(s.epoch),
		n:     uint64(min(len(g.flags), len(s.marks), len(g.codes)/g.dim)),
		codes: unsafe.SliceData(g.codes),
		q:     unsafe.SliceData(qc),
		dim:   uint64(g.dim),
		ids:   unsafe.SliceData(s.batch[:cap(s.batch)]),
		keys:  unsafe.SliceData(s.out[:cap(s.out)]),
		salt:  uint64(s.salt),
	}
	if g.metric == quant.L2 {
		s.fx.l2 = 1
	}
	sum := int32(0)
	for _, c := range qc {
		sum += int32(c)
	}
	s.fx.qcorr = uint64(uint32(128 * sum))
}

func (s *scratch) endFused() { s.fx = expandArgs{} }

// expandKeys is expand and the pool's first test in one assembly call, for
// walkAll: it marks the unvisited neighbours of ids (at most walkWidth
// nodes) on level visited and returns the keys (distance, salted id) of
// those closer than worst, in s's reused buffer. It starts loading the
// level-0 lists of nexts (salted keys, level 0 only). Callers check
// useFusedExpand and that s records no trace, and call beginFused first.
func (g *graph) expandKeys(s *scratch, ids []uint32, level int, nexts []uint64, worst uint64) []uint64 {
	a := &s.fx
	a.worst = worst
	a.nl, a.nn = 0, 0
	for _, id := range ids[:min(len(ids), walkWidth)] {
		l := g.list(id, level)
		if raceEnabled {
			// The race detector does not see the assembly's loads of
			// the list: load it here as the Go expansion does
			// (atomically), so that reading what a neighbour's id
			// leads to (its upper lists' offset, its vector), written
			// before the link was stored, is ordered after it.
			for i := range l {
				atomic.LoadUint32(&l[i])
			}
		}
		a.lists[a.nl] = &l[0]
		a.maxCnt, a.listLen = uint64(len(l)-1), uint64(4*len(l))
		a.nl++
	}
	if level == 0 {
		for _, k := range nexts[:min(len(nexts), walkWidth)] {
			a.nexts[a.nn] = &g.level0[int(keyID(k)^s.salt)*g.stride0()]
			a.nn++
		}
	}
	if a.nl == 0 {
		return nil
	}
	return s.out[:expandAVX512(a)]
}
