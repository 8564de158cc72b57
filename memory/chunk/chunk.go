package chunk

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// Defaults for the zero Options.
const (
	DefaultMaxChars = 300
	DefaultMinChars = 20
)

// Options tunes Split. The zero value means the defaults.
type Options struct {
	// MaxChars is the largest chunk, in characters (runes), not counting
	// leading and trailing white space. 0 means DefaultMaxChars.
	MaxChars int
	// MinChars is the size below which a fragment is merged into a
	// neighbour when the result fits in MaxChars. 0 means
	// min(DefaultMinChars, MaxChars/4); a negative value disables merging.
	MinChars int
}

// ErrOptions is wrapped by Split's error for invalid options.
var ErrOptions = errors.New("chunk: invalid options")

func (o Options) resolve() (maxChars, minChars int, err error) {
	maxChars, minChars = o.MaxChars, o.MinChars
	if maxChars < 0 {
		return 0, 0, fmt.Errorf("%w: MaxChars %d < 0", ErrOptions, maxChars)
	}
	if maxChars == 0 {
		maxChars = DefaultMaxChars
	}
	switch {
	case minChars == 0:
		minChars = min(DefaultMinChars, maxChars/4)
	case minChars < 0:
		minChars = 0
	case minChars > maxChars:
		return 0, 0, fmt.Errorf("%w: MinChars %d > MaxChars %d", ErrOptions, minChars, maxChars)
	}
	return maxChars, minChars, nil
}

// piece is a sentence or a part of one: text[start:end] in paragraph para,
// runes long. After splitLong, pieces start and end with non-space clusters.
type piece struct {
	start, end, para, runes int
}

// Split cuts text into chunks of at most MaxChars characters: paragraphs
// (separated by blank lines) first, then sentences, then, for a sentence that
// is still too long, the last space or clause punctuation that fits, and only
// then any character boundary. Cuts always fall between grapheme clusters.
// Consecutive sentences of a paragraph are packed into one chunk while they
// fit; fragments shorter than MinChars join a neighbour when the result fits.
//
// Chunks are substrings of text with leading and trailing white space
// removed, in order; together they hold every non-space character of text.
// A text of only white space gives no chunks. A single grapheme cluster
// longer than MaxChars runes (pathological combining sequences) becomes a
// chunk of its own, the one case where a chunk exceeds MaxChars.
func Split(text string, opts Options) ([]string, error) {
	maxChars, minChars, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	var pieces []piece
	for _, s := range sentences(text) {
		pieces = splitLong(pieces, text, s, maxChars)
	}
	pieces = pack(text, pieces, maxChars, minChars)
	out := make([]string, len(pieces))
	for i, p := range pieces {
		out[i] = text[p.start:p.end]
	}
	return out, nil
}

func isNewline(s string) bool {
	switch s {
	case "\n", "\r\n", "\r", "\u2028", "\u2029", "\u0085":
		return true
	}
	return false
}

// isSpace reports whether cluster c is white space only (a space followed by
// a combining mark is not: it carries a visible character).
func isSpace(c string) bool {
	return strings.TrimSpace(c) == ""
}

// trim removes leading and trailing white-space clusters; unlike
// strings.TrimSpace it never cuts a cluster such as " \u0301" in two.
func trim(s string) string {
	a, b := trimBounds(s)
	return s[a:b]
}

// trimBounds returns the byte range trim keeps.
func trimBounds(s string) (start, end int) {
	start, state := -1, -1
	for pos := 0; pos < len(s); {
		var c string
		c, _, _, state = uniseg.FirstGraphemeClusterInString(s[pos:], state)
		if !isSpace(c) {
			if start < 0 {
				start = pos
			}
			end = pos + len(c)
		}
		pos += len(c)
	}
	if start < 0 {
		return 0, 0
	}
	return start, end
}

// terminator classifies a cluster: 2 ends a sentence outright (Chinese and
// full-width 。！？), 1 ends it when followed by white space or the end of
// the text (Western .!? and the ellipsis, so "3.14" and "e.g.x" stay whole).
func terminator(s string) int {
	r, _ := utf8.DecodeRuneInString(s)
	switch r {
	case '。', '！', '？', '｡', '︒':
		return 2
	case '.', '!', '?', '…':
		return 1
	}
	return 0
}

// closing reports whether s closes a quotation or bracket, which stays with
// the sentence it ends ("他说：“好。”" keeps the ”).
func closing(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.Is(unicode.Pe, r) || unicode.Is(unicode.Pf, r) || r == '"' || r == '\''
}

// sentences returns the sentence spans of text, each tagged with its
// paragraph number; white space between sentences belongs to none.
func sentences(text string) []piece {
	var (
		out      []piece
		start    = -1 // start of the current sentence, -1 between sentences
		para     int
		newlines int // newlines since the last non-space cluster
		term     int // strongest terminator in the run ending the sentence
		state    = -1
	)
	end := func(pos int) {
		if start >= 0 {
			out = append(out, piece{start: start, end: pos, para: para})
		}
		start, term = -1, 0
	}
	for pos := 0; pos < len(text); {
		var c string
		c, _, _, state = uniseg.FirstGraphemeClusterInString(text[pos:], state)
		switch {
		case isNewline(c):
			end(pos)
			newlines++
		case isSpace(c):
			if term > 0 {
				end(pos)
			}
		default:
			if term > 0 && terminator(c) == 0 && !closing(c) {
				if term == 2 {
					end(pos)
				} else {
					term = 0 // "3.14": the period was not an end
				}
			}
			if start < 0 {
				if newlines >= 2 && len(out) > 0 {
					para++
				}
				start = pos
			}
			newlines = 0
			term = max(term, terminator(c))
		}
		pos += len(c)
	}
	end(len(text))
	return out
}

// breakAfter reports whether a cut right after cluster c reads naturally:
// after white space or clause punctuation.
func breakAfter(c string) bool {
	if isSpace(c) || terminator(c) > 0 {
		return true
	}
	r, _ := utf8.DecodeRuneInString(c)
	switch r {
	case ',', ';', ':', '，', '；', '：', '、', ')', '）':
		return true
	}
	return false
}

// splitLong appends s to dst, cut into pieces of at most maxChars runes
// when it is longer. It reads each cluster of s about once.
func splitLong(dst []piece, text string, s piece, maxChars int) []piece {
	a, b := trimBounds(text[s.start:s.end])
	s.start, s.end = s.start+a, s.start+b
	for s.start < s.end {
		rest := text[s.start:s.end]
		// Walk clusters until maxChars runes; remember the last natural break.
		runes, pos, soft, state := 0, 0, 0, -1
		for pos < len(rest) {
			c, _, _, st := uniseg.FirstGraphemeClusterInString(rest[pos:], state)
			n := utf8.RuneCountInString(c)
			if runes+n > maxChars && pos > 0 {
				break
			}
			state = st
			runes += n
			pos += len(c)
			if breakAfter(c) {
				soft = pos
			}
		}
		if pos == len(rest) {
			s.runes = runes
			return append(dst, s)
		}
		cut := pos // a single cluster over maxChars is kept whole (pos > 0)
		if soft > 0 {
			cut = soft
		}
		end := s.start + cut
		e := trim(text[s.start:end])
		dst = append(dst, piece{s.start, s.start + len(e), s.para, utf8.RuneCountInString(e)})
		// The next piece starts at the next non-space cluster.
		for s.start = end; s.start < s.end; {
			c, _, _, _ := uniseg.FirstGraphemeClusterInString(text[s.start:s.end], -1)
			if !isSpace(c) {
				break
			}
			s.start += len(c)
		}
	}
	return dst
}

// joined is the rune length of the chunk spanning a through b.
func joined(text string, a, b piece) int {
	return a.runes + utf8.RuneCountInString(text[a.end:b.start]) + b.runes
}

// pack merges consecutive pieces: within a paragraph while they fit, across
// a paragraph break only when the chunk so far or the whole next paragraph
// is shorter than minChars; then a remaining short chunk joins its next
// neighbour if that fits.
func pack(text string, pieces []piece, maxChars, minChars int) []piece {
	// Paragraph sizes decide whether a paragraph is a fragment to merge.
	paraRunes := map[int]int{}
	for i := 0; i < len(pieces); {
		j := i
		for j+1 < len(pieces) && pieces[j+1].para == pieces[i].para {
			j++
		}
		paraRunes[pieces[i].para] = utf8.RuneCountInString(text[pieces[i].start:pieces[j].end])
		i = j + 1
	}
	var out []piece
	for _, p := range pieces {
		if len(out) > 0 {
			last := &out[len(out)-1]
			sameParagraph := last.para == p.para
			tiny := last.runes < minChars || paraRunes[p.para] < minChars
			if n := joined(text, *last, p); (sameParagraph || tiny) && n <= maxChars {
				last.end, last.para, last.runes = p.end, p.para, n
				continue
			}
		}
		out = append(out, p)
	}
	// A short chunk left between two full ones: try the next neighbour
	// (the previous one was already tried above).
	for i := 0; i+1 < len(out); {
		if n := joined(text, out[i], out[i+1]); out[i].runes < minChars && n <= maxChars {
			out[i+1].start, out[i+1].runes = out[i].start, n
			out = append(out[:i], out[i+1:]...)
			continue
		}
		i++
	}
	return out
}
