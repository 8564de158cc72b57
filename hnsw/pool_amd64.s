//go:build !purego

#include "textflag.h"

// func insertSortedAVX512(keys *uint64, n int, k uint64) int
//
// keys[0:n] is ascending and has room for one more: k goes in at its lower
// bound, the keys from there move up one, and the position is returned.
// It is insertion sort's inner loop eight keys at a time: from the top,
// each block of keys not below k moves up one, until a block holds a key
// below k, whose upper lanes move with a mask and which ends the search.
// A walk's new keys land mostly near the pool's end, so this reads one or
// two blocks where a binary search would chain seven dependent loads, and
// it needs no memmove (whose size dispatch mispredicts).
TEXT ·insertSortedAVX512(SB), NOSPLIT, $0-32
	MOVQ keys+0(FP), DI
	MOVQ n+8(FP), SI
	MOVQ k+16(FP), AX
	VPBROADCASTQ AX, Z1
block:
	CMPQ SI, $8
	JB   tail
	VMOVDQU64 -64(DI)(SI*8), Z0 // keys[SI-8:SI]
	VPCMPUQ $5, Z1, Z0, K1      // lanes not below k
	KMOVW K1, DX
	CMPL DX, $0xff
	JNE  partial
	VMOVDQU64 Z0, -56(DI)(SI*8) // all eight move up one
	SUBQ $8, SI
	JMP  block
partial:
	VMOVDQU64 Z0, K1, -56(DI)(SI*8)
	POPCNTL DX, DX
	SUBQ DX, SI
	JMP  put
tail:
	TESTQ SI, SI
	JZ    put
	MOVQ SI, CX
	MOVQ $1, R8
	SHLQ CX, R8
	DECQ R8
	KMOVW R8, K2
	VMOVDQU64.Z (DI), K2, Z0    // keys[0:SI]
	VPCMPUQ $5, Z1, Z0, K2, K1
	VMOVDQU64 Z0, K1, 8(DI)
	KMOVW K1, DX
	POPCNTL DX, DX
	SUBQ DX, SI
put:
	MOVQ AX, (DI)(SI*8)
	MOVQ SI, ret+24(FP)
	VZEROUPPER
	RET
