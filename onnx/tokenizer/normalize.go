package tokenizer

import (
	"regexp"
	"strings"
	"unicode"
)

// normalizer rewrites a piece of text. Only the normalized text is kept (no
// alignment to the original), which is all Encode needs.
type normalizer interface {
	normalize(s string) string
}

type sequenceNormalizer []normalizer

func (q sequenceNormalizer) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}

// replaceNormalizer is HF's Replace: every non-overlapping match of a literal
// string or a regular expression, left to right, becomes content.
type replaceNormalizer struct {
	literal string
	re      *regexp.Regexp
	content string
}

func (r *replaceNormalizer) normalize(s string) string {
	if r.re != nil {
		if !r.re.MatchString(s) { // ReplaceAll copies even when nothing matches
			return s
		}
		return r.re.ReplaceAllLiteralString(s, r.content)
	}
	if r.literal == "" { // HF: an empty pattern matches nothing
		return s
	}
	return strings.ReplaceAll(s, r.literal, r.content)
}

// stripNormalizer is HF's Strip: removes White_Space characters (Rust's
// char::is_whitespace, which is the set unicode.IsSpace reports) at the ends.
type stripNormalizer struct{ left, right bool }

func (st stripNormalizer) normalize(s string) string {
	if st.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if st.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}

// prependNormalizer is HF's Prepend: adds a prefix to non-empty text.
type prependNormalizer string

func (p prependNormalizer) normalize(s string) string {
	if s == "" {
		return s
	}
	return string(p) + s
}
