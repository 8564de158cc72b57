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
// Open reads model.onnx once itself (a small protobuf walk, fuzzed) for the
// graph's inputs and outputs and the external data files its tensors name,
// then creates one ONNX Runtime session, which reads the weights. Inputs must
// be int64 and named input_ids (required), attention_mask and token_type_ids
// (zeros). The output is a [batch, dim] embedding used as it is
// (sentence_embedding, dense_vecs) or a [batch, seq, dim] last_hidden_state
// reduced to the first token's row (CLS) and L2-normalized, BGE-M3's dense
// vector. Open runs the model once on an empty text to learn the dimension.
//
// The tokenizer is a Hugging Face tokenizer.json loaded by onnx/tokenizer,
// set to truncate at MaxTokens and not to pad, or any Tokenizer.
//
// # Batching
//
// Embed tokenizes the texts (truncating at MaxTokens) 4096 at a time, sorts
// them by length and cuts the sorted list into batches whose padded size
// stays within a token budget and whose attention size (batch * seq^2) stays
// within the same budget at 512 tokens: short texts run many to a batch, long ones few, and
// memory stays bounded. Padding uses the tokenizer's pad id with a zero
// attention mask, so a text's vector does not depend on its batch mates. The
// context is checked between batches and terminates a running batch.
//
// # Ollama
//
// ollama.Embedder offers the same methods over a local Ollama server; it
// lives in package ollama so that this package depends on nothing of
// engram's but its tokenizer.
//
// # Download
//
// Pull fetches model files from a Hugging Face-style hub (base URL
// configurable; nothing is fetched unless it is called) into a directory
// (0700, files 0600): NAME.part first, resumed with a Range request after an
// interruption, checked against the expected or the hub's (X-Linked-Etag)
// sha256, then fsynced and renamed into place. BGEM3 is the fp32 export,
// BGEM3Int8 a published int8 one (MatMul weights dynamically quantized,
// run by ORT's integer kernels); scripts/onnx/quantize_int8.py makes the
// same form from any fp32 export (the tests' testdata/model/tiny-int8), or
// ORT's block-quantized MatMulNBits form with 8-bit weights and int8
// compute (testdata/model/tiny-nbits8). Either is an ordinary model to Open.
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
//   - Open hashes every model file for the fingerprint: for BGE-M3 (2.3 GB)
//     this costs a second or two. A model with its weights inside model.onnx
//     is also held in memory while Open reads it.
//   - Embed on an empty batch returns an empty slice and no error; an empty
//     string is embedded (from its special tokens alone); Embed truncates
//     silently, EmbedDetailed reports it.
//   - GPU providers (Device) need ORT's provider libraries next to
//     libonnxruntime.so; the npm CPU build has none, so Open fails with a
//     clear error, or runs on the CPU when CPUFallback is set (Provider says
//     so). scripts/onnx/gpu_bench.sh documents a GPU route.
package onnx
