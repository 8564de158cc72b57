package quant

// errLengths is the panic value of a kernel called with vectors of different
// lengths: a programming error, since dimensions are validated once at the
// API boundary. The assembly kernels rely on this check for memory safety.
const errLengths = "quant: vector lengths differ"

// DotInt8 returns the inner product of two int8 code vectors of equal length.
// It panics if the lengths differ (callers validate dimensions once, at the
// API boundary, not per distance).
func DotInt8(a, b []int8) int32 {
	if len(a) != len(b) {
		panic(errLengths)
	}
	return dotInt8(a, b)
}

// L2SqInt8 returns the squared Euclidean distance between two int8 code
// vectors of equal length. It panics if the lengths differ.
func L2SqInt8(a, b []int8) int32 {
	if len(a) != len(b) {
		panic(errLengths)
	}
	return l2SqInt8(a, b)
}

// DotFloat32 returns the inner product of two float32 vectors of equal
// length. It panics if the lengths differ.
func DotFloat32(a, b []float32) float32 {
	if len(a) != len(b) {
		panic(errLengths)
	}
	return dotFloat32(a, b)
}

// L2SqFloat32 returns the squared Euclidean distance between two float32
// vectors of equal length. It panics if the lengths differ.
func L2SqFloat32(a, b []float32) float32 {
	if len(a) != len(b) {
		panic(errLengths)
	}
	return l2SqFloat32(a, b)
}

// CodeDistance returns the distance between two codes under m in code units:
// smaller is closer, and the order agrees with the order of the float
// distances up to quantization error. It is what graph traversal compares.
func CodeDistance(m Metric, a, b []int8) int32 {
	if len(a) != len(b) {
		panic(errLengths)
	}
	if m == L2 {
		return l2SqInt8(a, b)
	}
	return -dotInt8(a, b)
}

// FloatDistance returns the distance between two full-precision vectors
// under m (for Cosine both must already be L2-normalized).
func FloatDistance(m Metric, a, b []float32) float32 {
	if len(a) != len(b) {
		panic(errLengths)
	}
	switch m {
	case L2:
		return l2SqFloat32(a, b)
	case Cosine:
		return 1 - dotFloat32(a, b)
	default:
		return -dotFloat32(a, b)
	}
}
