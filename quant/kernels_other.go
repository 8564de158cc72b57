//go:build purego || !amd64

package quant

// Without assembly (other architectures, or the purego tag) the portable
// kernels serve.

func dotInt8(a, b []int8) int32          { return dotInt8Generic(a, b) }
func l2SqInt8(a, b []int8) int32         { return l2SqInt8Generic(a, b) }
func dotFloat32(a, b []float32) float32  { return dotFloat32Generic(a, b) }
func l2SqFloat32(a, b []float32) float32 { return l2SqFloat32Generic(a, b) }
func availableKernels() []kernelSet      { return []kernelSet{genericKernels} }
func selectedKernels() string            { return genericKernels.name }

func codeDistancesSIMD(l2 bool, dst []int32, q, codes []int8, ids []uint32) bool { return false }
