//go:build !purego

package quant

import "golang.org/x/sys/cpu"

// The implementation is chosen once, at package initialization, from the
// CPU's features (x/sys/cpu also checks that the OS saves the wide
// registers). The flags never change afterwards, so the dispatch branch
// predicts perfectly.
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

// The dispatchers are written in assembly (kernels_amd64.s): a test of the
// feature flags and a tail jump to the chosen kernel. A Go dispatcher with
// two calls in it would exceed the inliner's budget and cost an extra call
// per distance; this way the exported kernels inline into their callers and
// reach the SIMD code in one call.

//go:noescape
func dotInt8(a, b []int8) int32

//go:noescape
func l2SqInt8(a, b []int8) int32

//go:noescape
func dotFloat32(a, b []float32) float32

//go:noescape
func l2SqFloat32(a, b []float32) float32

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

//go:noescape
func dotInt8GatherAVX512(dst []int32, q, codes []int8, ids []uint32)

//go:noescape
func l2SqInt8GatherAVX512(dst []int32, q, codes []int8, ids []uint32)

// codeDistancesSIMD fills dst (len(ids) long) with dot products (L2 false)
// or squared L2 distances from q to the codes of ids, and reports whether
// it could; the caller has validated the ids.
func codeDistancesSIMD(l2 bool, dst []int32, q, codes []int8, ids []uint32) bool {
	if !useAVX512 {
		return false
	}
	if l2 {
		l2SqInt8GatherAVX512(dst, q, codes, ids)
	} else {
		dotInt8GatherAVX512(dst, q, codes, ids)
	}
	return true
}
