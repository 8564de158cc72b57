//go:build !purego

#include "textflag.h"
#include "go_asm.h"

// expandAVX512 is one step of an unfiltered walk in one call (see
// expand_amd64.go): the lists of the nodes expanded next are prefetched,
// and those of this step's nodes (up to walkWidth of them); each list's
// unvisited ids are marked and gathered without a branch per id (whether
// a neighbour was visited is a coin flip a branch would mispredict), a
// neighbour two lists share once; their codes are prefetched together;
// then each distance is turned into a heap key, and the keys below worst
// are kept, again without a branch.
//
// The L2 body is quant's gather kernel's (quant/gather_avx512_amd64.s:
// VPDPBUSD over 64 bytes at a time, K1 masking the dim%64 tail); the dot
// product's needs one VPDPBUSD a block instead of two (see below).
//
// Registers: R15 = args, R10 = gathered ids, BX = how many, R11 = index,
// R12 = keys kept, R13 = codes, R9 = query code, DI = keys out, R8 = worst,
// SI = salt, CX = bytes left, AX/DX = current query/code bytes.

// KEEP_KEY turns the distance in AX (int32) and the id at ids[R11] into a
// key (order-preserving distance above the salted id), stores it at
// keys[R12] and counts it when it is below worst.
#define KEEP_KEY \
	XORL $0x80000000, AX; \
	SHLQ $32, AX; \
	MOVLQZX (R10)(R11*4), DX; \
	XORQ SI, DX; \
	ORQ  DX, AX; \
	MOVQ AX, (DI)(R12*8); \
	LEAQ 1(R12), DX; \
	CMPQ AX, R8; \
	CMOVQCS DX, R12; \
	INCQ R11

// NEXT_CODE ends the walk's distances once all BX are done; otherwise it
// points DX at ids[R11]'s code and AX at the query, CX at dim bytes to go,
// and clears the accumulator Z0.
#define NEXT_CODE \
	CMPQ R11, BX; \
	JAE  done; \
	MOVQ expandArgs_dim(R15), CX; \
	MOVLQZX (R10)(R11*4), DX; \
	IMULQ CX, DX; \
	ADDQ R13, DX; \
	MOVQ R9, AX; \
	VPXORD Z0, Z0, Z0

// REDUCE_AX sums the 16 int32 lanes of Z0 into AX.
#define REDUCE_AX \
	VEXTRACTI64X4 $1, Z0, Y1; \
	VPADDD  Y1, Y0, Y0; \
	VEXTRACTI128 $1, Y0, X1; \
	VPADDD  X1, X0, X0; \
	VPSHUFD $0x4e, X0, X1; \
	VPADDD  X1, X0, X0; \
	VPSHUFD $0xb1, X0, X1; \
	VPADDD  X1, X0, X0; \
	VMOVD   X0, AX

// func expandAVX512(a *expandArgs) int
TEXT ·expandAVX512(SB), NOSPLIT, $0-16
	MOVQ a+0(FP), R15

	// Start loading the lists of the nodes expanded next, then those of
	// this step's nodes (already loading, unless a new key went first).
	LEAQ expandArgs_nexts(R15), SI
	MOVQ expandArgs_nn(R15), BX
	MOVQ expandArgs_listLen(R15), CX
pnext:
	TESTQ BX, BX
	JZ   pnextdone
	MOVQ (SI), AX
	ADDQ $8, SI
	DECQ BX
	LEAQ -1(AX)(CX*1), DX
	ANDQ $~63, AX
pnextline:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, DX
	JLE  pnextline
	JMP  pnext
pnextdone:
	LEAQ expandArgs_lists(R15), SI
	MOVQ expandArgs_nl(R15), BX
	MOVQ expandArgs_listLen(R15), CX
plist:
	TESTQ BX, BX
	JZ   plistdone
	MOVQ (SI), AX
	ADDQ $8, SI
	DECQ BX
	LEAQ -1(AX)(CX*1), DX
	ANDQ $~63, AX
plistline:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, DX
	JLE  plistline
	JMP  plist
plistdone:

	MOVQ expandArgs_marks(R15), DI
	MOVQ expandArgs_epoch(R15), R8
	MOVQ expandArgs_n(R15), R9
	MOVQ expandArgs_ids(R15), R10
	XORQ BX, BX
	XORQ R13, R13
nextlist:
	CMPQ R13, expandArgs_nl(R15)
	JAE  cdone
	LEAQ expandArgs_lists(R15), SI
	MOVQ (SI)(R13*8), SI
	INCQ R13
	MOVLQZX (SI), CX // the count, at most maxCnt (else damaged bytes)
	ADDQ $4, SI
	MOVQ expandArgs_maxCnt(R15), AX
	CMPQ CX, AX
	CMOVQHI AX, CX
	XORQ R11, R11
cloop:
	CMPQ R11, CX
	JAE  nextlist
	MOVLQZX (SI)(R11*4), AX
	INCQ R11
	CMPQ AX, R9
	JAE  cloop // only in damaged unverified bytes
	MOVWLZX (DI)(AX*2), DX
	MOVW R8, (DI)(AX*2)
	MOVL AX, (R10)(BX*4)
	LEAQ 1(BX), R12
	CMPW DX, R8
	CMOVQNE R12, BX
	JMP  cloop
cdone:

	// Prefetch every gathered code, all lines of each.
	MOVQ expandArgs_codes(R15), R13
	MOVQ expandArgs_dim(R15), CX
	XORQ R11, R11
ploop:
	CMPQ R11, BX
	JAE  pdone
	MOVLQZX (R10)(R11*4), AX
	IMULQ CX, AX
	ADDQ R13, AX
	LEAQ -1(AX)(CX*1), DX
	ANDQ $~63, AX
pline:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, DX
	JLE  pline
	INCQ R11
	JMP  ploop
pdone:

	// K1 masks the dim%64 tail.
	ANDQ $63, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVQ AX, K1
	MOVQ expandArgs_q(R15), R9
	MOVQ expandArgs_keys(R15), DI
	MOVQ expandArgs_worst(R15), R8
	MOVQ expandArgs_salt(R15), SI
	XORQ R11, R11
	XORQ R12, R12
	MOVQ expandArgs_l2(R15), AX
	TESTQ AX, AX
	JNZ  l2start

	// Dot products as VPDPBUSD takes them: the code's bytes made unsigned
	// (c XOR 0x80 is c+128) times the query's signed bytes, so one
	// instruction a block; the 128·sum(q) this adds is taken off once.
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z4
dnext:
	NEXT_CODE
dloop64:
	CMPQ CX, $64
	JB   dtail
	VPXORD    (DX), Z4, Z7
	VPDPBUSD  (AX), Z7, Z0
	ADDQ      $64, AX
	ADDQ      $64, DX
	SUBQ      $64, CX
	JMP       dloop64
dtail:
	TESTQ CX, CX
	JZ    dreduce
	VMOVDQU8.Z (AX), K1, Z6
	VMOVDQU8.Z (DX), K1, Z7
	VPXORD     Z4, Z7, Z7 // the masked lanes' 128 meets q's zeros
	VPDPBUSD   Z6, Z7, Z0
dreduce:
	REDUCE_AX
	SUBL    expandArgs_qcorr(R15), AX
	NEGL    AX // the distance is the negated dot product
	KEEP_KEY
	JMP     dnext

l2start:
	MOVL $0x7f7f7f7f, AX
	VPBROADCASTD AX, Z4
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z5
lnext:
	NEXT_CODE
	VPXORD Z1, Z1, Z1
lloop64:
	CMPQ CX, $64
	JB   ltail
	VMOVDQU64 (AX), Z6
	VMOVDQU64 (DX), Z7
	ADDQ      $64, AX
	ADDQ      $64, DX
	SUBQ      $64, CX
	JMP       lblock
ltail:
	TESTQ CX, CX
	JZ    lreduce
	VMOVDQU8.Z (AX), K1, Z6
	VMOVDQU8.Z (DX), K1, Z7
	XORQ  CX, CX
lblock:
	VPMAXSB  Z7, Z6, Z8
	VPMINSB  Z7, Z6, Z9
	VPSUBB   Z9, Z8, Z8
	VPANDD   Z4, Z8, Z9
	VPANDD   Z5, Z8, Z10
	VPDPBUSD Z9, Z8, Z0
	VPDPBUSD Z10, Z8, Z1
	JMP      lloop64
lreduce:
	VPSUBD  Z1, Z0, Z0
	REDUCE_AX
	KEEP_KEY
	JMP     lnext

done:
	VZEROUPPER
	MOVQ R12, ret+8(FP)
	RET

