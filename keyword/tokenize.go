package keyword

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// AnalyzerVersion identifies the token stream Tokens produces. It is stored in
// every serialized index; Open refuses an index built with another version,
// because its terms would not match the terms of new queries.
const AnalyzerVersion = 1

// maxTokenBytes bounds a single Latin token; longer runs (base64 blobs, hex
// dumps) are dropped rather than indexed, as Lucene does with its 255 limit.
const maxTokenBytes = 64

// analyzer selects the optional stages of the token pipeline. Tokens uses
// defaultAnalyzer; the other combinations exist for the measurements in
// tokenize_test.go and bench/results/bm25.md.
type analyzer struct {
	stem     bool // Porter-stem ASCII words
	stopword bool // drop English stopwords
}

var defaultAnalyzer = analyzer{stem: true, stopword: true}

// englishStopwords is Lucene's English stop set (EnglishAnalyzer), the one
// Elasticsearch's "english" analyzer and BEIR's BM25 baseline use.
var englishStopwords = map[string]struct{}{}

func init() {
	for _, w := range []string{
		"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if",
		"in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that",
		"the", "their", "then", "there", "these", "they", "this", "to", "was",
		"will", "with",
	} {
		englishStopwords[w] = struct{}{}
	}
}

// Tokens returns the index terms of text, in order, with repetitions:
//
//   - the text is NFKC-normalized (full-width letters and digits, ligatures
//     and compatibility forms fold to their plain forms) and lowercased;
//   - a run of letters, digits and combining marks outside the CJK scripts is
//     one word; English stopwords are dropped and ASCII words are reduced with
//     the Porter stemmer ("running" -> "run"); a possessive 's is dropped;
//   - a run of Han, Hiragana, Katakana or Hangul characters yields every
//     character (unigram) and every adjacent pair (bigram), interleaved:
//     "记忆库" -> 记, 记忆, 忆, 忆库, 库;
//   - everything else (spaces, punctuation, symbols) separates tokens.
//
// Tokens never fails: invalid UTF-8 bytes act as separators.
func Tokens(text string) []string {
	return defaultAnalyzer.appendTokens(nil, text)
}

// AppendTokens appends the terms of text (see Tokens) to dst.
func AppendTokens(dst []string, text string) []string {
	return defaultAnalyzer.appendTokens(dst, text)
}

// IsCJK reports whether r belongs to a script Tokens indexes character by
// character (Han, Hiragana, Katakana, Hangul) rather than word by word.
func IsCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

func isApostrophe(r rune) bool { return r == '\'' || r == '\u2019' }

func (a analyzer) appendTokens(dst []string, text string) []string {
	if !norm.NFKC.IsNormalString(text) {
		text = norm.NFKC.String(text)
	}
	var (
		word    []byte // current Latin word, lowercased
		cjkPrev rune   // previous rune of the current CJK run, or -1
		buf     [2 * utf8.UTFMax]byte
	)
	cjkPrev = -1
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf && c != '\'' {
			// ASCII fast path: most text is mostly ASCII.
			switch {
			case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
				word = append(word, c)
				cjkPrev = -1
			case c >= 'A' && c <= 'Z':
				word = append(word, c+'a'-'A')
				cjkPrev = -1
			default:
				dst = a.flushWord(dst, word)
				word, cjkPrev = word[:0], -1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			dst = a.flushWord(dst, word)
			word, cjkPrev = word[:0], -1
		case IsCJK(r):
			dst = a.flushWord(dst, word)
			word = word[:0]
			if cjkPrev >= 0 {
				n := utf8.EncodeRune(buf[:], cjkPrev)
				n += utf8.EncodeRune(buf[n:], r)
				dst = append(dst, string(buf[:n]))
			}
			dst = append(dst, string(r))
			cjkPrev = r
		case isWordRune(r):
			cjkPrev = -1
			word = utf8.AppendRune(word, unicode.ToLower(r))
		case isApostrophe(r) && len(word) > 0 && possessive(text[i+size:]):
			// "engram's" -> "engram": skip the apostrophe and the s.
			i += size + 1
			continue
		default:
			dst = a.flushWord(dst, word)
			word, cjkPrev = word[:0], -1
		}
		i += size
	}
	return a.flushWord(dst, word)
}

// possessive reports whether rest (the text after an apostrophe) is an "s"
// that ends the word.
func possessive(rest string) bool {
	if len(rest) == 0 || (rest[0] != 's' && rest[0] != 'S') {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest[1:])
	return len(rest) == 1 || !isWordRune(r) || IsCJK(r)
}

func (a analyzer) flushWord(dst []string, word []byte) []string {
	if len(word) == 0 || len(word) > maxTokenBytes {
		return dst
	}
	if a.stopword {
		if _, ok := englishStopwords[string(word)]; ok {
			return dst
		}
	}
	if a.stem && isLowerASCII(word) {
		word = porterStem(word)
	}
	return append(dst, string(word))
}

func isLowerASCII(b []byte) bool {
	for _, c := range b {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
