// Package dataset reads and generates the vector sets the ANN benchmarks
// and tests run on.
//
// Files are the TEXMEX .fvecs/.ivecs formats (per row a little-endian int32
// dimension, then that many float32 or int32 values), optionally gzipped
// (name ends in .gz). The readers accept untrusted bytes: the dimension is
// bounded by MaxDim, every row must repeat the first row's dimension, a
// truncated row is an error, and memory grows only with the bytes actually
// read. They are fuzzed (FuzzReadFvecs, FuzzReadIvecs).
//
// Load opens the sets under shared/datasets by name ("sift10k",
// "glove100-10k", "glove100-100k"); FindRoot locates that directory by
// walking up from a test's working directory (or ENGRAM_DATASETS).
//
// Synthetic generates the 1024-d set the shared data lacks: a Gaussian
// mixture in a low-dimensional latent space (32 dims, 64 clusters by
// default) mapped linearly into Dim dimensions, plus a little isotropic
// noise, L2-normalized, fully determined by the seed. That shape (low
// intrinsic dimension, clusters, unit norm) is what sentence embeddings
// look like to an index, unlike uniform random vectors whose neighbours are
// all nearly equidistant. GroundTruth computes exact neighbours by brute
// force with the quant float kernels on all cores, scanning the base in
// cache-sized blocks; ties go to the smaller id, as in the shared files.
//
// # Caveats
//
// Everything is held in memory: 200k x 1024 floats is 800 MB. Ground truth
// for that size takes minutes on two cores; generate it once with
// bench/cmd/synth and reuse the files.
package dataset
