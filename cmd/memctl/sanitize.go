package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// sanitize makes stored text safe to print to a terminal: control
// characters (C0, DEL, C1: ESC starts the sequences that clear, recolour or
// retitle a terminal), invalid UTF-8 and the bidirectional overrides that
// reorder what a reader sees are shown escaped (ESC as \x1b, newline as \n,
// U+202E as \u202e). Everything else, emoji and CJK included, passes unchanged. --json output
// does not go through it: JSON escapes control characters itself and stays
// exact.
func sanitize(s string) string {
	if !needsSanitize(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports the non-ASCII runes sanitize escapes: C1 controls,
// bidirectional embeddings, overrides and isolates, and the line and
// paragraph separators.
func unsafeRune(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) ||
		r == 0x2028 || r == 0x2029 || r == 0x200e || r == 0x200f || r == 0x061c
}

func needsSanitize(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if c < 0x20 || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// termWriter is the safety net under every human-readable line memctl
// prints: it passes text, newlines and tabs, and escapes what sanitize
// escapes except that C0 controls other than newline and tab are written
// \xNN and the rest \uNNNN. A JSON document written through it still
// decodes to the same value (encoding/json escapes C0 itself, and \uNNNN
// is a JSON escape), but --json output and export bypass it to stay exact.
// A rune split across two writes is held back until it is complete.
type termWriter struct {
	w       io.Writer
	pending []byte
}

func (t *termWriter) Write(p []byte) (int, error) {
	data := p
	if len(t.pending) > 0 {
		data = append(t.pending, p...)
		t.pending = nil
	}
	var out []byte
	start := 0
	flushTo := func(i int) {
		out = append(out, data[start:i]...)
	}
	for i := 0; i < len(data); {
		c := data[i]
		if c < 0x80 {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				flushTo(i)
				if c == 0x7f {
					out = append(out, `\u007f`...)
				} else {
					out = fmt.Appendf(out, `\x%02x`, c)
				}
				start = i + 1
			}
			i++
			continue
		}
		if !utf8.FullRune(data[i:]) {
			flushTo(i)
			t.pending = append([]byte(nil), data[i:]...)
			start = len(data)
			break
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			flushTo(i)
			out = fmt.Appendf(out, `\x%02x`, c)
			start = i + 1
		} else if unsafeRune(r) {
			flushTo(i)
			out = fmt.Appendf(out, `\u%04x`, r)
			start = i + size
		}
		i += size
	}
	if start < len(data) {
		flushTo(len(data))
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes out a rune left incomplete at the end, escaped.
func (t *termWriter) Close() error {
	if len(t.pending) == 0 {
		return nil
	}
	var out []byte
	for _, c := range t.pending {
		out = fmt.Appendf(out, `\x%02x`, c)
	}
	t.pending = nil
	_, err := t.w.Write(out)
	return err
}
