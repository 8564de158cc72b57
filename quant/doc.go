// Package quant holds int8 scalar quantization and the distance kernels the
// vector index runs on.
//
// A Quantizer is trained on a sample of a collection and maps float32 vectors
// to int8 codes. Distances between codes are computed by integer kernels
// (DotInt8, L2SqInt8); distances between full-precision vectors, used to
// rescore the final candidates of a search, by float32 kernels (DotFloat32,
// L2SqFloat32).
//
// # Quantizer: one global symmetric scale
//
// code = clamp(round(x/Scale), -127, 127), with Scale chosen so that the
// 0.9999 quantile of |x| over the training sample maps to 127. One scale for
// every dimension and no offset keeps a·b ≈ Scale²·(codeA·codeB) and
// |a-b|² ≈ Scale²·|codeA-codeB|², so the plain integer kernels rank
// candidates for every metric, with no per-vector correction terms. -128 is
// never produced (the range stays symmetric), though the kernels accept it.
//
// The alternatives were measured (go run ./bench/cmd/quantstudy; brute-force
// recall@10 ranking the whole base by code distance, and after rescoring the
// top 40 with float distances; full table in bench/results/quant.md):
//
//	set                  global q=0.999  global q=0.9999  per-dim scale+offset  rescored (any)
//	sift10k (L2)         0.983           0.979            0.990                 1.000
//	glove100 10k (cos)   0.970           0.979            0.975                 1.000
//	synthetic 1024-d     0.960           0.977            0.969                 1.000
//
// A per-dimension scale and offset (using all 256 levels between per-
// dimension 0.1/99.9% quantiles) is no better on normalized embeddings and
// would break the integer kernels (distances would need per-dimension
// weights or decoding). A per-dimension offset with the global scale keeps
// L2 exact (it cancels in a-b) but gained only 0.002 on SIFT; under dot and
// cosine it would add a per-vector term. Rescoring the top 40 restores
// recall@10 to 1.000 in every case, so the quantizer's job is only to keep
// the true neighbours within the candidate list, and the simplest scheme
// does. Clip quantiles: 0.99 clips too much (0.885-0.964), 1 (the maximum)
// wastes range on outliers; 0.9999 was best or within 0.004 of best.
//
// # Kernels
//
// The implementation is chosen once, at start-up, from the CPU's features
// (golang.org/x/sys/cpu): AVX-512 (F, BW, VL and VNNI), else AVX2 with FMA,
// else portable Go. Building with the purego tag, or for another
// architecture, forces the portable code. The exported functions inline into
// the caller and reach the selected kernel through a small assembly
// dispatcher that tail-jumps, so a distance costs one call.
//
//   - DotInt8, AVX-512: VPDPBUSD multiplies unsigned by signed bytes. With
//     a' = a XOR 0x80 = a+128, Σa'b = a·b + 128·Σb, and Σb comes from a
//     second VPDPBUSD against ones; exact for all inputs including -128
//     (dword sums wrap exactly like the reference int32 loop).
//   - L2SqInt8, AVX-512: d = max(a,b) - min(a,b) is |a-b| as an unsigned
//     byte; with d = lo + 128h (lo = d AND 0x7f), Σd² = VPDPBUSD(d, lo) -
//     VPDPBUSD(d, d AND 0x80), since the signed byte 0x80 is -128. This
//     avoids widening to words (1.24x the VPMOVSXBW+VPDPWSSD version).
//   - AVX2: bytes sign-extended to words, VPMADDWD (exact: a pair sum is at
//     most 2·128² = 32768). VPMADDUBSW, which saturates at int16, is not used.
//   - Float32: four independent FMA accumulators (AVX-512 or AVX2); the
//     AVX-512 tails use masked loads, the AVX2 tails a scalar loop. Summation
//     order differs from the portable loop, so results differ in the last
//     bits.
//
// Every kernel is cross-checked against the portable reference at lengths
// 0..1536 with random and extreme data, and the test suite re-runs itself
// with -tags purego. Throughput (bench/results/quant.md): in cache about
// 160 GB/s for DotInt8 at 1024-d; streaming from memory the int8 kernels run
// at about the machine's read bandwidth.
//
// # Caveats
//
// The kernels panic if the two vectors' lengths differ: dimensions are
// validated once at the API boundary, and the assembly relies on the check.
// Encode and Decode panic if the destination is shorter than the source,
// and do not validate values: callers reject NaN and Inf before encoding
// (a NaN encodes to an unspecified code).
package quant
