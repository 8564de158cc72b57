//go:build !purego

#include "textflag.h"

// func prefetchU32(p *uint32)
TEXT ·prefetchU32(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func prefetchF32(p *float32)
TEXT ·prefetchF32(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func prefetchSpan(p unsafe.Pointer, n int)
TEXT ·prefetchSpan(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE done
	LEAQ -1(AX)(CX*1), DX // the last byte
	ANDQ $~63, AX         // the first line
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, DX
	JLE loop
done:
	RET
