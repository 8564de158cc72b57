package quant

// The portable implementations. They are also the reference the SIMD
// kernels are tested against. Callers have checked that the lengths match.

func dotInt8Generic(a, b []int8) int32 {
	b = b[:len(a)]
	var s int32
	for i := range a {
		s += int32(a[i]) * int32(b[i])
	}
	return s
}

func l2SqInt8Generic(a, b []int8) int32 {
	b = b[:len(a)]
	var s int32
	for i := range a {
		d := int32(a[i]) - int32(b[i])
		s += d * d
	}
	return s
}

func dotFloat32Generic(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

func l2SqFloat32Generic(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		d0 := a[i] - b[i]
		d1 := a[i+1] - b[i+1]
		d2 := a[i+2] - b[i+2]
		d3 := a[i+3] - b[i+3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(a); i++ {
		d := a[i] - b[i]
		s0 += d * d
	}
	return s0 + s1 + s2 + s3
}

// kernelSet is one implementation of the four kernels; tests and benchmarks
// run every set the CPU supports against the generic one.
type kernelSet struct {
	name        string
	dotInt8     func(a, b []int8) int32
	l2SqInt8    func(a, b []int8) int32
	dotFloat32  func(a, b []float32) float32
	l2SqFloat32 func(a, b []float32) float32
}

var genericKernels = kernelSet{"generic", dotInt8Generic, l2SqInt8Generic, dotFloat32Generic, l2SqFloat32Generic}
