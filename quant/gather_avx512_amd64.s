//go:build !purego

#include "textflag.h"

// Query-to-many kernels for graph traversal: distances from one query code
// to the codes of a list of node ids, with the next node's code prefetched
// while the current one is computed (neighbour codes are scattered through
// memory, so the load latency, not the arithmetic, is what a search waits
// on). The caller has checked that every id's code lies inside codes.
//
// Register use: R8 = dst, R9 = q, R10 = dim, R11 = codes, R12 = ids,
// R13 = len(ids), BX = index into ids, SI/DI = current vectors, CX = bytes
// left, K1 = mask of the dim%64 tail bytes.

// PREFETCH_NEXT prefetches the code of ids[BX+1], if any, one cache line
// per 64 bytes.
#define PREFETCH_NEXT(skip, loop) \
	LEAQ 1(BX), AX; \
	CMPQ AX, R13; \
	JAE  skip; \
	MOVLQZX (R12)(AX*4), DX; \
	IMULQ R10, DX; \
	ADDQ R11, DX; \
	MOVQ R10, CX; \
loop: \
	PREFETCHT0 (DX); \
	ADDQ $64, DX; \
	SUBQ $64, CX; \
	JG   loop; \
skip:

// func dotInt8GatherAVX512(dst []int32, q, codes []int8, ids []uint32)
// The per-vector body is dotInt8AVX512's (see kernels_avx512_amd64.s).
TEXT ·dotInt8GatherAVX512(SB), NOSPLIT, $0-96
	MOVQ dst_base+0(FP), R8
	MOVQ q_base+24(FP), R9
	MOVQ q_len+32(FP), R10
	MOVQ codes_base+48(FP), R11
	MOVQ ids_base+72(FP), R12
	MOVQ ids_len+80(FP), R13
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z4
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Z5
	MOVQ R10, CX
	ANDQ $63, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVQ AX, K1
	XORQ BX, BX

gdot_next:
	CMPQ BX, R13
	JAE  gdot_done
	PREFETCH_NEXT(gdot_pref, gdot_pfloop)
	MOVLQZX (R12)(BX*4), DI
	IMULQ R10, DI
	ADDQ  R11, DI
	MOVQ  R9, SI
	MOVQ  R10, CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1

gdot_loop64:
	CMPQ CX, $64
	JB   gdot_tail
	VMOVDQU64 (DI), Z7
	VPXORD    (SI), Z4, Z6
	VPDPBUSD  Z7, Z6, Z0
	VPDPBUSD  Z7, Z5, Z1
	ADDQ      $64, SI
	ADDQ      $64, DI
	SUBQ      $64, CX
	JMP       gdot_loop64

gdot_tail:
	TESTQ CX, CX
	JZ    gdot_reduce
	VMOVDQU8.Z (SI), K1, Z6
	VMOVDQU8.Z (DI), K1, Z7
	VPXORD     Z4, Z6, Z6
	VPDPBUSD   Z7, Z6, Z0
	VPDPBUSD   Z7, Z5, Z1

gdot_reduce:
	VPSLLD  $7, Z1, Z1
	VPSUBD  Z1, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD  Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD  X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDD  X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPADDD  X1, X0, X0
	VMOVD   X0, AX
	MOVL    AX, (R8)(BX*4)
	INCQ    BX
	JMP     gdot_next

gdot_done:
	VZEROUPPER
	RET

// func l2SqInt8GatherAVX512(dst []int32, q, codes []int8, ids []uint32)
// The per-vector body is l2SqInt8AVX512's (|a-b| as unsigned bytes, split
// into low 7 bits and top bit for VPDPBUSD); K1 masks the dim%64 tail.
TEXT ·l2SqInt8GatherAVX512(SB), NOSPLIT, $0-96
	MOVQ dst_base+0(FP), R8
	MOVQ q_base+24(FP), R9
	MOVQ q_len+32(FP), R10
	MOVQ codes_base+48(FP), R11
	MOVQ ids_base+72(FP), R12
	MOVQ ids_len+80(FP), R13
	MOVL $0x7f7f7f7f, AX
	VPBROADCASTD AX, Z4
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z5
	MOVQ R10, CX
	ANDQ $63, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVQ AX, K1
	XORQ BX, BX

gl2_next:
	CMPQ BX, R13
	JAE  gl2_done
	PREFETCH_NEXT(gl2_pref, gl2_pfloop)
	MOVLQZX (R12)(BX*4), DI
	IMULQ R10, DI
	ADDQ  R11, DI
	MOVQ  R9, SI
	MOVQ  R10, CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1

gl2_loop64:
	CMPQ CX, $64
	JB   gl2_tail
	VMOVDQU64 (SI), Z6
	VMOVDQU64 (DI), Z7
	ADDQ      $64, SI
	ADDQ      $64, DI
	SUBQ      $64, CX
	JMP       gl2_block

gl2_tail:
	TESTQ CX, CX
	JZ    gl2_reduce
	VMOVDQU8.Z (SI), K1, Z6
	VMOVDQU8.Z (DI), K1, Z7
	XORQ  CX, CX

gl2_block:
	VPMAXSB  Z7, Z6, Z8
	VPMINSB  Z7, Z6, Z9
	VPSUBB   Z9, Z8, Z8
	VPANDD   Z4, Z8, Z9
	VPANDD   Z5, Z8, Z10
	VPDPBUSD Z9, Z8, Z0
	VPDPBUSD Z10, Z8, Z1
	JMP      gl2_loop64

gl2_reduce:
	VPSUBD  Z1, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD  Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD  X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDD  X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPADDD  X1, X0, X0
	VMOVD   X0, AX
	MOVL    AX, (R8)(BX*4)
	INCQ    BX
	JMP     gl2_next

gl2_done:
	VZEROUPPER
	RET
