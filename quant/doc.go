// Package quant holds int8 scalar quantization and the distance kernels the
// vector index runs on.
//
// A Quantizer is trained on a sample of a collection and maps float32 vectors
// to int8 codes. Distances between codes are computed by integer kernels
// (DotInt8, L2SqInt8); distances between full-precision vectors, used to
// rescore the final candidates of a search, by float32 kernels (DotFloat32,
// L2SqFloat32).
//
// The kernels pick an implementation once at start-up from the CPU's features
// (AVX-512 VNNI, AVX2, or portable Go). Building with the purego tag forces
// the portable implementation.
package quant
