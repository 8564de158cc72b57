//go:build !amd64 || purego

package hnsw

// useInsertAsm is false where there is no assembly insertion.
var useInsertAsm = false

// insertSortedAVX512 is never called where useInsertAsm is false.
func insertSortedAVX512(keys *uint64, n int, k uint64) int {
	panic("hnsw: no assembly insertion on this platform")
}
