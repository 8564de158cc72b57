//go:build !purego

#include "textflag.h"

// AVX2 kernels. Register use: SI = a, DI = b, CX = elements left. Tails
// shorter than one vector run a scalar loop after the vector reduction
// (VEX scalar ops would clear the upper lanes of a live accumulator).

// func dotInt8AVX2(a, b []int8) int32
//
// Bytes are sign-extended to words and VPMADDWD sums pairs of products
// into dwords. This is exact for every input: a pair sum is at most
// 2*128*128 = 32768. (VPMADDUBSW would saturate at int16 and is avoided.)
TEXT ·dotInt8AVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

dot8_loop32:
	CMPQ CX, $32
	JB   dot8_loop16
	VPMOVSXBW (SI), Y2
	VPMOVSXBW (DI), Y3
	VPMADDWD  Y3, Y2, Y2
	VPADDD    Y2, Y0, Y0
	VPMOVSXBW 16(SI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMADDWD  Y5, Y4, Y4
	VPADDD    Y4, Y1, Y1
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $32, CX
	JMP       dot8_loop32

dot8_loop16:
	CMPQ CX, $16
	JB   dot8_reduce
	VPMOVSXBW (SI), Y2
	VPMOVSXBW (DI), Y3
	VPMADDWD  Y3, Y2, Y2
	VPADDD    Y2, Y0, Y0
	ADDQ      $16, SI
	ADDQ      $16, DI
	SUBQ      $16, CX

dot8_reduce:
	VPADDD  Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD  X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDD  X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPADDD  X1, X0, X0
	VMOVD   X0, BX
	VZEROUPPER

dot8_tail:
	TESTQ   CX, CX
	JZ      dot8_done
	MOVBQSX (SI), AX
	MOVBQSX (DI), DX
	IMULL   DX, AX
	ADDL    AX, BX
	INCQ    SI
	INCQ    DI
	DECQ    CX
	JMP     dot8_tail

dot8_done:
	MOVL BX, ret+48(FP)
	RET

// func l2SqInt8AVX2(a, b []int8) int32
TEXT ·l2SqInt8AVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

l28_loop32:
	CMPQ CX, $32
	JB   l28_loop16
	VPMOVSXBW (SI), Y2
	VPMOVSXBW (DI), Y3
	VPSUBW    Y3, Y2, Y2
	VPMADDWD  Y2, Y2, Y2
	VPADDD    Y2, Y0, Y0
	VPMOVSXBW 16(SI), Y4
	VPMOVSXBW 16(DI), Y5
	VPSUBW    Y5, Y4, Y4
	VPMADDWD  Y4, Y4, Y4
	VPADDD    Y4, Y1, Y1
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $32, CX
	JMP       l28_loop32

l28_loop16:
	CMPQ CX, $16
	JB   l28_reduce
	VPMOVSXBW (SI), Y2
	VPMOVSXBW (DI), Y3
	VPSUBW    Y3, Y2, Y2
	VPMADDWD  Y2, Y2, Y2
	VPADDD    Y2, Y0, Y0
	ADDQ      $16, SI
	ADDQ      $16, DI
	SUBQ      $16, CX

l28_reduce:
	VPADDD  Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD  X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDD  X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPADDD  X1, X0, X0
	VMOVD   X0, BX
	VZEROUPPER

l28_tail:
	TESTQ   CX, CX
	JZ      l28_done
	MOVBQSX (SI), AX
	MOVBQSX (DI), DX
	SUBL    DX, AX
	IMULL   AX, AX
	ADDL    AX, BX
	INCQ    SI
	INCQ    DI
	DECQ    CX
	JMP     l28_tail

l28_done:
	MOVL BX, ret+48(FP)
	RET

// func dotFloat32AVX2(a, b []float32) float32
TEXT ·dotFloat32AVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

dotf_loop32:
	CMPQ CX, $32
	JB   dotf_loop8
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         dotf_loop32

dotf_loop8:
	CMPQ CX, $8
	JB   dotf_reduce
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         dotf_loop8

dotf_reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VADDPS X1, X0, X0

dotf_tail:
	TESTQ CX, CX
	JZ    dotf_done
	VMOVSS      (SI), X4
	VFMADD231SS (DI), X4, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         dotf_tail

dotf_done:
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func l2SqFloat32AVX2(a, b []float32) float32
TEXT ·l2SqFloat32AVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

l2f_loop32:
	CMPQ CX, $32
	JB   l2f_loop8
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VSUBPS      (DI), Y4, Y4
	VSUBPS      32(DI), Y5, Y5
	VSUBPS      64(DI), Y6, Y6
	VSUBPS      96(DI), Y7, Y7
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y5, Y5, Y1
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y7, Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         l2f_loop32

l2f_loop8:
	CMPQ CX, $8
	JB   l2f_reduce
	VMOVUPS     (SI), Y4
	VSUBPS      (DI), Y4, Y4
	VFMADD231PS Y4, Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         l2f_loop8

l2f_reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VADDPS X1, X0, X0

l2f_tail:
	TESTQ CX, CX
	JZ    l2f_done
	VMOVSS      (SI), X4
	VSUBSS      (DI), X4, X4
	VFMADD231SS X4, X4, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         l2f_tail

l2f_done:
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET
