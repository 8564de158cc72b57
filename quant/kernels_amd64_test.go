//go:build !purego

package quant

// setFeatures turns kernel paths off (never on beyond what the CPU has)
// and returns a function restoring the detected state.
func setFeatures(avx512, avx2 bool) func() {
	old512, old2 := useAVX512, useAVX2
	useAVX512 = avx512 && old512
	useAVX2 = avx2 && old2
	return func() { useAVX512, useAVX2 = old512, old2 }
}
