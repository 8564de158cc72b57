// Package onnx embeds text with an XLM-RoBERTa-shaped encoder (BGE-M3 or a
// smaller model of the same kind) through ONNX Runtime, via
// github.com/yalue/onnxruntime_go.
//
// # Runtime library
//
// libonnxruntime.so is loaded at the first Open from Options.LibraryPath,
// else $ENGRAM_ONNXRUNTIME_LIB, else the project cache
// ($ENGRAM_CACHE or os.UserCacheDir()/engram, under onnxruntime/1.30.0/),
// where scripts/setup.sh puts the library it extracts from the npm tarball of
// onnxruntime-node. onnxruntime_go v1.27.0 asks for C API version 24, which
// ORT 1.30 serves.
//
// # Model
//
// Open reads the model's inputs and outputs. Inputs must be int64 and named
// input_ids (required), attention_mask and token_type_ids (zeros). The output
// is a [batch, dim] embedding used as it is (sentence_embedding, dense_vecs)
// or a [batch, seq, dim] last_hidden_state reduced to the first token's row
// (CLS) and L2-normalized, BGE-M3's dense vector. Weights in an external data
// file (model.onnx_data) are read by ONNX Runtime from the model's directory.
// Open runs the model once on an empty text to learn the dimension.
//
// # Batching
//
// Embed tokenizes every text (truncating at MaxTokens), sorts them by length
// and cuts the sorted list into batches whose padded size stays within a
// token budget and whose attention size (batch * seq^2) stays within the same
// budget at 512 tokens: short texts run many to a batch, long ones few, and
// memory stays bounded. Padding uses the tokenizer's pad id with a zero
// attention mask, so a text's vector does not depend on its batch mates. The
// context is checked between batches and terminates a running batch.
//
// # Fingerprint
//
// sha256 over the model file, its external data files and the tokenizer file
// (each with its role and size), plus the output name, pooling, dimension and
// MaxTokens: what decides the vectors, so the store's model lock can refuse a
// different model.
//
// # Caveats
//
//   - The ONNX Runtime environment is process-global in onnxruntime_go. It is
//     created by the first Open and kept until the process exits (Close frees
//     the session only): destroying it dlcloses the library, and ORT does not
//     promise that an environment can be created again after that. All
//     embedders in a process share one library; Open with a different
//     library path fails.
//   - Open loads the model twice (once to read input/output metadata) and
//     hashes every model file: for BGE-M3 (2.2 GB) this costs seconds.
//   - GPU providers (Device) need ORT's provider libraries next to
//     libonnxruntime.so; the npm CPU build has none, so Open fails with a
//     clear error, or runs on the CPU when CPUFallback is set (Provider says
//     so). scripts/onnx/gpu_bench.sh documents a GPU route.
package onnx
