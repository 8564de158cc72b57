package memory

import "strings"

// TEMPORARY until memory/chunk lands.
type chunkOptions struct{ MaxChars int }

func chunkSplit(text string, o chunkOptions) []string {
	var out []string
	for _, p := range strings.Split(text, "\n\n") {
		r := []rune(p)
		for len(r) > o.MaxChars {
			out = append(out, string(r[:o.MaxChars]))
			r = r[o.MaxChars:]
		}
		out = append(out, string(r))
	}
	return out
}
