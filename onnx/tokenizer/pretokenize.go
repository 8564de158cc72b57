package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// piece is a pre-tokenized span handed to the model. first reports whether it
// starts at offset 0 of the original text (for Metaspace's "first" scheme).
type piece struct {
	text  string
	first bool
}

// preTokenizer splits pieces further; it appends its output to dst.
type preTokenizer interface {
	preTokenize(dst []piece, in []piece) []piece
}

type sequencePreTokenizer []preTokenizer

func (q sequencePreTokenizer) preTokenize(dst, in []piece) []piece {
	for i, p := range q {
		if i == len(q)-1 {
			return p.preTokenize(dst, in)
		}
		in = p.preTokenize(nil, in)
	}
	return append(dst, in...)
}

type prependScheme int

const (
	prependAlways prependScheme = iota
	prependFirst
	prependNever
)

// metaspace is HF's Metaspace: spaces become the replacement character, a
// replacement is prepended per the scheme, and with split the text is cut
// before every replacement character (HF's MergedWithNext).
type metaspace struct {
	repl   string
	scheme prependScheme
	split  bool
}

func (m *metaspace) preTokenize(dst, in []piece) []piece {
	for _, p := range in {
		s := p.text
		// HF prepends to non-empty text only (NormalizedString::prepend),
		// after replacing spaces.
		prepend := s != "" && s[0] != ' ' && !strings.HasPrefix(s, m.repl) &&
			(m.scheme == prependAlways || (m.scheme == prependFirst && p.first))
		if prepend || strings.IndexByte(s, ' ') >= 0 {
			var b strings.Builder
			b.Grow(len(s) + len(m.repl)*(strings.Count(s, " ")+1))
			if prepend {
				b.WriteString(m.repl)
			}
			for {
				i := strings.IndexByte(s, ' ')
				if i < 0 {
					break
				}
				b.WriteString(s[:i])
				b.WriteString(m.repl)
				s = s[i+1:]
			}
			b.WriteString(s)
			s = b.String()
		}
		if !m.split {
			if s != "" {
				dst = append(dst, piece{s, p.first})
			}
			continue
		}
		start := 0
		for start < len(s) {
			next := strings.Index(s[start+1:], m.repl)
			end := len(s)
			if next >= 0 {
				end = start + 1 + next
			}
			dst = append(dst, piece{s[start:end], p.first && start == 0})
			start = end
		}
	}
	return dst
}

// whitespaceSplit is HF's WhitespaceSplit: cuts at runs of White_Space and
// drops them.
type whitespaceSplit struct{}

func (whitespaceSplit) preTokenize(dst, in []piece) []piece {
	for _, p := range in {
		s := p.text
		start := -1
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			if unicode.IsSpace(r) {
				if start >= 0 {
					dst = append(dst, piece{s[start:i], p.first && start == 0})
					start = -1
				}
			} else if start < 0 {
				start = i
			}
			i += n
		}
		if start >= 0 {
			dst = append(dst, piece{s[start:], p.first && start == 0})
		}
	}
	return dst
}
