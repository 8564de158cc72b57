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

// func prefetchRows(base unsafe.Pointer, ids []uint32, stride int)
TEXT ·prefetchRows(SB), NOSPLIT, $0-40
	MOVQ base+0(FP), R8
	MOVQ ids_base+8(FP), R9
	MOVQ ids_len+16(FP), R10
	MOVQ stride+32(FP), R11
	TESTQ R11, R11
	JLE rows_done
	XORQ BX, BX
rows_next:
	CMPQ BX, R10
	JAE rows_done
	MOVLQZX (R9)(BX*4), AX
	IMULQ R11, AX
	ADDQ R8, AX             // the row's first byte
	LEAQ -1(AX)(R11*1), DX  // its last byte
	ANDQ $~63, AX
rows_line:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, DX
	JLE rows_line
	INCQ BX
	JMP rows_next
rows_done:
	RET
