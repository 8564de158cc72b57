//go:build !purego

package hnsw

import "golang.org/x/sys/cpu"

// useInsertAsm: the CPU runs insertSortedAVX512. Tests turn it off to
// compare with the portable insertion.
var useInsertAsm = cpu.X86.HasAVX512F && cpu.X86.HasPOPCNT

// insertSortedAVX512 inserts k into the ascending keys[0:n] (room for one
// more) at its lower bound and returns the position (pool_amd64.s).
//
//go:noescape
func insertSortedAVX512(keys *uint64, n int, k uint64) int
