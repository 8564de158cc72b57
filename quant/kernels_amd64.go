//go:build !purego

package quant

import "golang.org/x/sys/cpu"

// The implementation is chosen once, at package initialization, from the
// CPU's features (x/sys/cpu also checks that the OS saves the wide
// registers). Dispatch is a branch on a constant-after-init bool rather than
// a function variable: the branch predicts perfectly and the asm call is
// direct.
var (
	// useAVX512 needs VNNI for VPDPBUSD/VPDPWSSD and BW for byte masks.
	useAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI
	useAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

//go:noescape
func dotInt8AVX512(a, b []int8) int32

//go:noescape
func l2SqInt8AVX512(a, b []int8) int32

//go:noescape
func dotFloat32AVX512(a, b []float32) float32

//go:noescape
func l2SqFloat32AVX512(a, b []float32) float32

//go:noescape
func dotInt8AVX2(a, b []int8) int32

//go:noescape
func l2SqInt8AVX2(a, b []int8) int32

//go:noescape
func dotFloat32AVX2(a, b []float32) float32

//go:noescape
func l2SqFloat32AVX2(a, b []float32) float32

var (
	avx512Kernels = kernelSet{"avx512vnni", dotInt8AVX512, l2SqInt8AVX512, dotFloat32AVX512, l2SqFloat32AVX512}
	avx2Kernels   = kernelSet{"avx2", dotInt8AVX2, l2SqInt8AVX2, dotFloat32AVX2, l2SqFloat32AVX2}
)

func dotInt8(a, b []int8) int32 {
	if useAVX512 {
		return dotInt8AVX512(a, b)
	}
	if useAVX2 {
		return dotInt8AVX2(a, b)
	}
	return dotInt8Generic(a, b)
}

func l2SqInt8(a, b []int8) int32 {
	if useAVX512 {
		return l2SqInt8AVX512(a, b)
	}
	if useAVX2 {
		return l2SqInt8AVX2(a, b)
	}
	return l2SqInt8Generic(a, b)
}

func dotFloat32(a, b []float32) float32 {
	if useAVX512 {
		return dotFloat32AVX512(a, b)
	}
	if useAVX2 {
		return dotFloat32AVX2(a, b)
	}
	return dotFloat32Generic(a, b)
}

func l2SqFloat32(a, b []float32) float32 {
	if useAVX512 {
		return l2SqFloat32AVX512(a, b)
	}
	if useAVX2 {
		return l2SqFloat32AVX2(a, b)
	}
	return l2SqFloat32Generic(a, b)
}

// availableKernels lists every implementation this CPU can run.
func availableKernels() []kernelSet {
	ks := []kernelSet{genericKernels}
	if useAVX2 {
		ks = append(ks, avx2Kernels)
	}
	if useAVX512 {
		ks = append(ks, avx512Kernels)
	}
	return ks
}

// selectedKernels names the implementation the exported kernels use.
func selectedKernels() string {
	switch {
	case useAVX512:
		return avx512Kernels.name
	case useAVX2:
		return avx2Kernels.name
	}
	return genericKernels.name
}
