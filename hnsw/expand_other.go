//go:build !amd64 || purego

package hnsw

// useFusedExpand is false where there is no assembly expansion.
var useFusedExpand = false

// expandKeys is never called where useFusedExpand is false.
func (g *graph) expandKeys(s *scratch, qc []int8, id uint32, level int, next uint64, more bool, worst uint64) []uint64 {
	panic("hnsw: no fused expansion on this platform")
}
