//go:build !purego

#include "textflag.h"

// Dispatchers: the arguments are already in place, so each one tail-jumps
// to the kernel the CPU supports (see kernels_amd64.go).

TEXT ·dotInt8(SB), NOSPLIT, $0-52
	CMPB ·useAVX512(SB), $0
	JEQ  dot8_avx2
	JMP  ·dotInt8AVX512(SB)
dot8_avx2:
	CMPB ·useAVX2(SB), $0
	JEQ  dot8_generic
	JMP  ·dotInt8AVX2(SB)
dot8_generic:
	JMP  ·dotInt8Generic(SB)

TEXT ·l2SqInt8(SB), NOSPLIT, $0-52
	CMPB ·useAVX512(SB), $0
	JEQ  l28_avx2
	JMP  ·l2SqInt8AVX512(SB)
l28_avx2:
	CMPB ·useAVX2(SB), $0
	JEQ  l28_generic
	JMP  ·l2SqInt8AVX2(SB)
l28_generic:
	JMP  ·l2SqInt8Generic(SB)

TEXT ·dotFloat32(SB), NOSPLIT, $0-52
	CMPB ·useAVX512(SB), $0
	JEQ  dotf_avx2
	JMP  ·dotFloat32AVX512(SB)
dotf_avx2:
	CMPB ·useAVX2(SB), $0
	JEQ  dotf_generic
	JMP  ·dotFloat32AVX2(SB)
dotf_generic:
	JMP  ·dotFloat32Generic(SB)

TEXT ·l2SqFloat32(SB), NOSPLIT, $0-52
	CMPB ·useAVX512(SB), $0
	JEQ  l2f_avx2
	JMP  ·l2SqFloat32AVX512(SB)
l2f_avx2:
	CMPB ·useAVX2(SB), $0
	JEQ  l2f_generic
	JMP  ·l2SqFloat32AVX2(SB)
l2f_generic:
	JMP  ·l2SqFloat32Generic(SB)
