//go:build !amd64 || purego

package hnsw

// useFusedExpand is false where there is no assembly expansion.
var useFusedExpand = false

// expandArgs is empty where there is no assembly expansion.
type expandArgs struct{}

// beginFused is never called where useFusedExpand is false.
func (g *graph) beginFused(s *scratch, qc []int8) { panic("hnsw: no fused expansion on this platform") }

func (s *scratch) endFused() {}

// expandKeys is never called where useFusedExpand is false.
func (g *graph) expandKeys(s *scratch, ids []uint32, level int, nexts []uint64, worst uint64) []uint64 {
	panic("hnsw: no fused expansion on this platform")
}
