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
// does not go through it: it stays exact, with the same characters written as
// JSON escapes (jsonSafe).
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

// jsonSafe rewrites an encoding/json document so that no character a
// terminal acts on appears raw: encoding/json escapes C0 controls (and
// U+2028, U+2029) but writes DEL, the C1 controls (U+009B is CSI, U+0085
// NEL) and the bidirectional overrides, embeddings, isolates and marks as
// they are. Those characters can only stand inside JSON strings, so each
// becomes its \uNNNN escape there and the document decodes to the same
// value. Everything else, emoji and CJK included, is left as it is. The
// result is data appended to dst.
func jsonSafe(dst, data []byte) []byte {
	start := 0
	for i := 0; i < len(data); {
		c := data[i]
		if c < 0x80 {
			if c == 0x7f {
				dst = append(dst, data[start:i]...)
				dst = append(dst, `\u007f`...)
				start = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if unsafeRune(r) {
			dst = append(dst, data[start:i]...)
			dst = fmt.Appendf(dst, `\u%04x`, r)
			start = i + size
		}
		i += size
	}
	return append(dst, data[start:]...)
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
