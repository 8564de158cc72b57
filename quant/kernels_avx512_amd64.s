//go:build !purego

#include "textflag.h"

// AVX-512 kernels. Register use: SI = a, DI = b, CX = elements left.
// Tails shorter than one vector use masked loads, which never fault on the
// masked-off bytes, so no scalar loop is needed.

// func dotInt8AVX512(a, b []int8) int32
//
// VPDPBUSD multiplies unsigned bytes by signed bytes. With a' = a XOR 0x80
// = a+128 (unsigned), sum(a'*b) = a.b + 128*sum(b); sum(b) comes from a
// second VPDPBUSD against a vector of ones. Every product fits in int16 and
// the dword sums wrap exactly like the generic int32 loop, so the result is
// exact for all inputs, -128 included.
TEXT ·dotInt8AVX512(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VPXORD Z0, Z0, Z0 // sum(a'*b), even blocks
	VPXORD Z1, Z1, Z1 // sum(b), even blocks
	VPXORD Z2, Z2, Z2 // sum(a'*b), odd blocks
	VPXORD Z3, Z3, Z3 // sum(b), odd blocks
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z4
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Z5

dot8_loop128:
	CMPQ CX, $128
	JB   dot8_loop64
	VMOVDQU64 (DI), Z7
	VPXORD    (SI), Z4, Z6
	VPDPBUSD  Z7, Z6, Z0
	VPDPBUSD  Z7, Z5, Z1
	VMOVDQU64 64(DI), Z9
	VPXORD    64(SI), Z4, Z8
	VPDPBUSD  Z9, Z8, Z2
	VPDPBUSD  Z9, Z5, Z3
	ADDQ      $128, SI
	ADDQ      $128, DI
	SUBQ      $128, CX
	JMP       dot8_loop128

dot8_loop64:
	CMPQ CX, $64
	JB   dot8_tail
	VMOVDQU64 (DI), Z7
	VPXORD    (SI), Z4, Z6
	VPDPBUSD  Z7, Z6, Z0
	VPDPBUSD  Z7, Z5, Z1
	ADDQ      $64, SI
	ADDQ      $64, DI
	SUBQ      $64, CX

dot8_tail:
	TESTQ CX, CX
	JZ    dot8_reduce
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVQ AX, K1
	VMOVDQU8.Z (SI), K1, Z6
	VMOVDQU8.Z (DI), K1, Z7
	VPXORD     Z4, Z6, Z6 // masked-off a' = 128, times b = 0
	VPDPBUSD   Z7, Z6, Z2
	VPDPBUSD   Z7, Z5, Z3

dot8_reduce:
	VPADDD  Z2, Z0, Z0
	VPADDD  Z3, Z1, Z1
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
	MOVL    AX, ret+48(FP)
	VZEROUPPER
	RET

// func l2SqInt8AVX512(a, b []int8) int32
//
// d = max(a,b) - min(a,b) is |a-b| as an unsigned byte (0..255, exact).
// VPDPBUSD multiplies unsigned by signed bytes, so with d = lo + 128h
// (lo = d AND 0x7f, h = top bit), d·lo is taken directly and d·128h as the
// negation of d·(d AND 0x80), whose signed value is -128h:
// Σd² = Σd·lo - Σd·s8(d AND 0x80). No widening to words, no shuffles.
TEXT ·l2SqInt8AVX512(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VPXORD Z0, Z0, Z0 // Σd·lo, even blocks
	VPXORD Z1, Z1, Z1 // Σd·s8(hi), even blocks
	VPXORD Z2, Z2, Z2 // odd blocks
	VPXORD Z3, Z3, Z3
	MOVL $0x7f7f7f7f, AX
	VPBROADCASTD AX, Z4
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z5

l28_loop128:
	CMPQ CX, $128
	JB   l28_loop64
	VMOVDQU64 (SI), Z6
	VMOVDQU64 (DI), Z7
	VPMAXSB   Z7, Z6, Z8
	VPMINSB   Z7, Z6, Z9
	VPSUBB    Z9, Z8, Z8
	VPANDD    Z4, Z8, Z9
	VPANDD    Z5, Z8, Z10
	VPDPBUSD  Z9, Z8, Z0
	VPDPBUSD  Z10, Z8, Z1
	VMOVDQU64 64(SI), Z11
	VMOVDQU64 64(DI), Z12
	VPMAXSB   Z12, Z11, Z13
	VPMINSB   Z12, Z11, Z14
	VPSUBB    Z14, Z13, Z13
	VPANDD    Z4, Z13, Z14
	VPANDD    Z5, Z13, Z15
	VPDPBUSD  Z14, Z13, Z2
	VPDPBUSD  Z15, Z13, Z3
	ADDQ      $128, SI
	ADDQ      $128, DI
	SUBQ      $128, CX
	JMP       l28_loop128

l28_loop64:
	CMPQ CX, $64
	JB   l28_tail
	VMOVDQU64 (SI), Z6
	VMOVDQU64 (DI), Z7
	ADDQ      $64, SI
	ADDQ      $64, DI
	SUBQ      $64, CX
	JMP       l28_block

l28_tail:
	TESTQ CX, CX
	JZ    l28_reduce
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVQ AX, K1
	VMOVDQU8.Z (SI), K1, Z6 // masked-off bytes are 0 in both: d = 0
	VMOVDQU8.Z (DI), K1, Z7
	XORQ  CX, CX

l28_block: // one 64-byte block in Z6, Z7; CX is 0 after the tail
	VPMAXSB  Z7, Z6, Z8
	VPMINSB  Z7, Z6, Z9
	VPSUBB   Z9, Z8, Z8
	VPANDD   Z4, Z8, Z9
	VPANDD   Z5, Z8, Z10
	VPDPBUSD Z9, Z8, Z0
	VPDPBUSD Z10, Z8, Z1
	JMP      l28_loop64

l28_reduce:
	VPADDD  Z2, Z0, Z0
	VPADDD  Z3, Z1, Z1
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
	MOVL    AX, ret+48(FP)
	VZEROUPPER
	RET

// func dotFloat32AVX512(a, b []float32) float32
// Four independent FMA chains hide the FMA latency.
TEXT ·dotFloat32AVX512(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

dotf_loop64:
	CMPQ CX, $64
	JB   dotf_loop16
	VMOVUPS     (SI), Z4
	VMOVUPS     64(SI), Z5
	VMOVUPS     128(SI), Z6
	VMOVUPS     192(SI), Z7
	VFMADD231PS (DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	VFMADD231PS 128(DI), Z6, Z2
	VFMADD231PS 192(DI), Z7, Z3
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         dotf_loop64

dotf_loop16:
	CMPQ CX, $16
	JB   dotf_tail
	VMOVUPS     (SI), Z4
	VFMADD231PS (DI), Z4, Z0
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         dotf_loop16

dotf_tail:
	TESTQ CX, CX
	JZ    dotf_reduce
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1
	VMOVUPS.Z   (SI), K1, Z4
	VMOVUPS.Z   (DI), K1, Z5
	VFMADD231PS Z5, Z4, Z1

dotf_reduce:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func l2SqFloat32AVX512(a, b []float32) float32
TEXT ·l2SqFloat32AVX512(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

l2f_loop64:
	CMPQ CX, $64
	JB   l2f_loop16
	VMOVUPS     (SI), Z4
	VMOVUPS     64(SI), Z5
	VMOVUPS     128(SI), Z6
	VMOVUPS     192(SI), Z7
	VSUBPS      (DI), Z4, Z4
	VSUBPS      64(DI), Z5, Z5
	VSUBPS      128(DI), Z6, Z6
	VSUBPS      192(DI), Z7, Z7
	VFMADD231PS Z4, Z4, Z0
	VFMADD231PS Z5, Z5, Z1
	VFMADD231PS Z6, Z6, Z2
	VFMADD231PS Z7, Z7, Z3
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         l2f_loop64

l2f_loop16:
	CMPQ CX, $16
	JB   l2f_tail
	VMOVUPS     (SI), Z4
	VSUBPS      (DI), Z4, Z4
	VFMADD231PS Z4, Z4, Z0
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         l2f_loop16

l2f_tail:
	TESTQ CX, CX
	JZ    l2f_reduce
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1
	VMOVUPS.Z   (SI), K1, Z4
	VMOVUPS.Z   (DI), K1, Z5
	VSUBPS      Z5, Z4, Z4
	VFMADD231PS Z4, Z4, Z1

l2f_reduce:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET
