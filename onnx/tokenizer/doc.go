// Package tokenizer is a pure-Go implementation of the HuggingFace
// tokenizers pipeline for sentencepiece-Unigram tokenizers of the
// XLM-RoBERTa / BGE-M3 kind. It loads a tokenizer.json and gives exactly the
// token ids HuggingFace's Rust tokenizers give.
//
// # Tests against HuggingFace
//
// testdata/tokenizer holds tokenizers trained with sentencepiece (Unigram,
// nmt_nfkc) on English, Chinese, Japanese, Korean, Devanagari, emoji and
// combining-mark text and converted to tokenizer.json the way transformers'
// XLMRobertaConverter does, in six configurations (current converter layout,
// a tiny 3,002-piece one for the ONNX tests, the older WhitespaceSplit +
// RobertaProcessing layout with a normalized <mask>, prepend_scheme first
// and never, byte_fallback), plus the ids HF tokenizers 0.22 (npm
// @anush008/tokenizers) gives for 14,000 strings, without truncation and
// truncated to 64 and 8192 tokens, and for padded batches. golden_test.go
// requires all of them to match; scripts/tokenizer/regen.sh regenerates the
// data.
//
// # Pipeline
//
// Encode runs HF's steps in HF's order:
//
//  1. Added tokens with normalized=false (e.g. <s>, </s>, <mask>) are split off
//     the raw text: leftmost-longest matches, with single_word, lstrip and
//     rstrip honoured.
//  2. Each remaining part is normalized. Supported normalizers: Precompiled
//     (sentencepiece's precompiled_charsmap), Replace (literal or regex),
//     Strip, Prepend and Sequence. Added tokens with normalized=true are then
//     split off the normalized text.
//  3. Pre-tokenizers: Metaspace (replacement, prepend_scheme
//     always/first/never or the legacy add_prefix_space, split), WhitespaceSplit
//     and Sequence.
//  4. The Unigram model: Viterbi over a byte trie of the vocabulary; a
//     character no piece starts with is an unknown node scored
//     min_score - 10; consecutive unknown nodes are fused into one token
//     (HF always fuses for Unigram) that becomes unk_id, or its <0xXX> byte
//     pieces when byte_fallback is set. Ties break as in HF: candidates are
//     visited shortest first and only a strictly better score wins.
//  5. Truncation to the maximum length minus the special tokens, then the
//     post-processor (TemplateProcessing, RobertaProcessing, BertProcessing)
//     adds them; then padding (fixed, or to the batch's longest in
//     EncodeBatch; optionally to a multiple; left or right).
//
// Any other component type gives an *UnsupportedError naming it.
//
// # The precompiled charsmap
//
// The Precompiled normalizer decodes sentencepiece's precompiled_charsmap
// (a darts-clone double-array trie plus a table of NUL-terminated replacement
// strings; see docs/format/precompiled_charsmap.md) and applies it the way HF
// does, which reproduces a sentencepiece quirk: text is walked by extended
// grapheme cluster (UAX #29); a cluster shorter than 6 bytes is looked up
// whole and, when the trie holds a key that is a prefix of it, the WHOLE
// cluster is replaced by the replacement of the SHORTEST such key (so
// "Ａ\u0301" becomes "A", dropping the accent, exactly as HF does); otherwise
// each character is looked up on its own.
//
// # Truncation and padding
//
// When tokenizer.json configures no truncation, Encode truncates to
// DefaultMaxLength (8192, BGE-M3's context) and says so in
// Encoding.Truncated; WithTruncation and WithoutTruncation change that.
// Padding follows the file's padding section or WithPadding. The pad id is
// the file's pad_id, else the id of "<pad>", else 0.
//
// # Caveats
//
//   - Only encoding of single sequences; no pairs, no decoding, no offsets.
//   - Text must be valid UTF-8 (ErrInvalidUTF8), as HF only takes valid strings.
//   - Replace patterns given as Regex use Go's RE2 syntax, not Oniguruma's;
//     a pattern RE2 cannot compile is an error at Parse.
//   - Grapheme clusters come from github.com/rivo/uniseg (Unicode 15.0);
//     HF's unicode-segmentation follows a newer Unicode. The difference could
//     only matter for a cluster under 6 bytes made of characters assigned or
//     reclassified after 15.0 whose first character the charsmap maps.
//   - Metaspace's prepend_scheme "first" prepends to the piece that starts at
//     offset 0 of the text; HF decides with its alignment tracking, which can
//     differ when a normalizer deletes leading characters before a
//     WhitespaceSplit.
//   - Viterbi needs 16 bytes per byte of a pre-tokenized piece; text without
//     spaces (Chinese, Japanese) is one piece per run, so a 10 MB run takes
//     160 MB while it is encoded (HF needs more). With right truncation,
//     encoding stops after the piece that crosses the limit.
//   - A Tokenizer is immutable and safe for concurrent use; With* methods
//     return copies. Slices in an Encoding belong to the caller.
package tokenizer
