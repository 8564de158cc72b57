package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is an entry of tokenizer.json's added_tokens.
type addedToken struct {
	content    string
	id         int32
	singleWord bool
	lstrip     bool
	rstrip     bool
	normalized bool
	special    bool
}

// addedMatcher finds added tokens in text the way HF's AddedVocabulary does:
// leftmost-longest, non-overlapping matches (an Aho-Corasick automaton in HF;
// a first-byte filter and direct comparison here, since there are few such
// tokens), then single_word, lstrip and rstrip applied to each match.
type addedMatcher struct {
	tokens []addedToken
	first  [256]bool
}

func newAddedMatcher(tokens []addedToken) *addedMatcher {
	if len(tokens) == 0 {
		return nil
	}
	m := &addedMatcher{tokens: tokens}
	for _, t := range tokens {
		m.first[t.content[0]] = true
	}
	return m
}

// segment is a part of the text: either a matched added token (tok >= 0) or
// text for the normalizer and the model; start is its byte offset.
type segment struct {
	text  string
	start int
	tok   int // index into addedMatcher.tokens, -1 for plain text
}

// split appends the segments of s (offset base) to dst. Empty plain segments
// are dropped, as HF's PreTokenizedString::split drops empty splits.
func (m *addedMatcher) split(dst []segment, s string, base int) []segment {
	if m == nil {
		if s != "" {
			dst = append(dst, segment{s, base, -1})
		}
		return dst
	}
	done := 0 // s[:done] is emitted
	for i := 0; i < len(s); {
		if !m.first[s[i]] {
			i++
			continue
		}
		best := -1
		for k, t := range m.tokens {
			if strings.HasPrefix(s[i:], t.content) && (best < 0 || len(t.content) > len(m.tokens[best].content)) {
				best = k
			}
		}
		if best < 0 {
			i++
			continue
		}
		t := &m.tokens[best]
		start, stop := i, i+len(t.content)
		i = stop // matching resumes after the raw match even when skipped
		if t.singleWord && ((start > 0 && endsWithWord(s[:start])) || (stop < len(s) && startsWithWord(s[stop:]))) {
			continue
		}
		if t.lstrip {
			start = max(len(strings.TrimRightFunc(s[:start], unicode.IsSpace)), done)
		}
		if t.rstrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
			i = stop
		}
		if start > done {
			dst = append(dst, segment{s[done:start], base + done, -1})
		}
		dst = append(dst, segment{s[start:stop], base + start, best})
		done = stop
	}
	if done < len(s) {
		dst = append(dst, segment{s[done:], base + done, -1})
	}
	return dst
}

// isWordChar is regex \w as HF's single_word check uses it.
func isWordChar(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) ||
		unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Join_Control, r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.No, r)
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isWordChar(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isWordChar(r)
}
