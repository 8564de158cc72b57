// Package chunk cuts memory text into pieces small enough to embed and to
// show in a prompt, along the text's own structure.
//
// Split works in three passes over the original string, keeping byte spans
// rather than copies:
//
//  1. Sentences: the text is read one grapheme cluster at a time (uniseg).
//     A newline ends a sentence; two or more newlines also end a paragraph.
//     Chinese and full-width 。！？ end a sentence at once; Western . ! ? and
//     … only when white space or the end of the text follows, so "3.14" and
//     "v1.2" stay whole. Closing quotes and brackets stay with the sentence
//     they close (“好的。”).
//  2. Long sentences: a sentence over MaxChars is cut at the last white
//     space or clause punctuation (, ; : ，；：、) that fits, else at the last
//     cluster that fits. Cuts are always between grapheme clusters, so never
//     inside a UTF-8 sequence, a combining sequence or an emoji.
//  3. Packing: consecutive sentences of a paragraph share a chunk while it
//     stays within MaxChars; paragraphs start new chunks, except that a
//     fragment shorter than MinChars joins a neighbour when the result fits.
//
// Lengths are counted in runes (characters), not bytes or tokens: 300
// characters is about 150-300 tokens for Chinese and 60-80 for English with
// the usual tokenizers, small enough for any embedder's window.
//
// # Caveats
//
//   - Abbreviations ("e.g. this", "Dr. Smith") end Western sentences: there is
//     no abbreviation list. The pieces are still whole words.
//   - A single grapheme cluster longer than MaxChars runes (only
//     pathological combining sequences) is kept whole and exceeds the limit.
//   - Invalid UTF-8 bytes pass through unchanged and count one character each.
package chunk
