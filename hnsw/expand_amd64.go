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
	list    *uint32 // the expanded node's neighbour ids
	cnt     uint64  // how many
	marks   *uint16 // visited marks, n of them
	epoch   uint64  // the current mark (low 16 bits)
	n       uint64  // ids at or past n are skipped (damaged bytes)
	codes   *int8   // n*dim codes
	q       *int8   // the query's code, dim bytes
	dim     uint64
	ids     *uint32 // scratch for cnt ids
	keys    *uint64 // out: cnt keys at most
	worst   uint64  // keep keys below this
	salt    uint64  // XORed into the ids of the keys
	next    *uint32 // a list to prefetch, or nil
	nextLen uint64  // its bytes
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
	if c := 2*g.m + 1; cap(s.batch) < c || cap(s.out) < c {
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
// walkAll: it marks node id's unvisited neighbours on level visited and
// returns the keys (distance, salted id) of those closer than worst, in
// s's reused buffer. When more, it starts loading next's level-0 list.
// Callers check useFusedExpand and that s records no trace, and call
// beginFused first.
func (g *graph) expandKeys(s *scratch, id uint32, level int, next uint64, more bool, worst uint64) []uint64 {
	l := g.list(id, level)
	cnt := min(int(atomic.LoadUint32(&l[0])), len(l)-1, cap(s.out))
	if cnt <= 0 {
		return nil
	}
	a := &s.fx
	a.list, a.cnt, a.worst, a.next = &l[1], uint64(cnt), worst, nil
	if more && level == 0 {
		o := int(keyID(next)^s.salt) * g.stride0()
		a.next, a.nextLen = &g.level0[o], uint64(4*g.stride0())
	}
	return s.out[:expandAVX512(a)]
}
