package tokenizer

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// precompiled is sentencepiece's precompiled_charsmap: a darts-clone double
// array trie over UTF-8 keys whose values are offsets into a blob of
// NUL-terminated replacement strings.
//
// Layout: uint32 LE trie size in bytes, the trie units (uint32 LE each), then
// the replacement blob. See docs/format/precompiled_charsmap.md.
type precompiled struct {
	units []uint32
	blob  string
	ascii [128]asciiRule // single-byte lookups, precomputed
}

type asciiRule struct {
	repl string
	ok   bool
}

func parsePrecompiled(data []byte) (*precompiled, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("precompiled_charsmap: %d bytes, need at least 4", len(data))
	}
	size := binary.LittleEndian.Uint32(data)
	if size%4 != 0 || uint64(size) > uint64(len(data)-4) {
		return nil, fmt.Errorf("precompiled_charsmap: trie size %d invalid for %d bytes of data", size, len(data))
	}
	p := &precompiled{units: make([]uint32, size/4)}
	for i := range p.units {
		p.units[i] = binary.LittleEndian.Uint32(data[4+4*i:])
	}
	blob := data[4+size:]
	if !utf8.Valid(blob) {
		return nil, fmt.Errorf("precompiled_charsmap: replacement table is not valid UTF-8")
	}
	p.blob = string(blob)
	for b := range p.ascii {
		p.ascii[b].repl, p.ascii[b].ok = p.lookup(string(rune(b)))
	}
	return p, nil
}

// Unit fields, as darts-clone packs them.
func unitHasLeaf(u uint32) bool  { return (u>>8)&1 == 1 }
func unitValue(u uint32) uint32  { return u & (1<<31 - 1) }
func unitLabel(u uint32) uint32  { return u & (1<<31 | 0xFF) }
func unitOffset(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }
func (p *precompiled) unit(pos uint32) (uint32, bool) {
	if int(pos) >= len(p.units) || pos > 1<<31 {
		return 0, false
	}
	return p.units[pos], true
}

// lookup returns the replacement of the SHORTEST trie key that is a prefix of
// key. HF's spm_precompiled takes the first common-prefix-search result, which
// is the shortest; it also stops at a NUL byte. Out-of-range positions (a
// corrupt trie) end the search instead of panicking.
func (p *precompiled) lookup(key string) (string, bool) {
	u, ok := p.unit(0)
	if !ok {
		return "", false
	}
	pos := unitOffset(u)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == 0 {
			break
		}
		pos ^= uint32(c)
		if u, ok = p.unit(pos); !ok || unitLabel(u) != uint32(c) {
			return "", false
		}
		pos ^= unitOffset(u)
		if unitHasLeaf(u) {
			leaf, ok := p.unit(pos)
			if !ok {
				return "", false
			}
			return p.replacement(unitValue(leaf))
		}
	}
	return "", false
}

func (p *precompiled) replacement(idx uint32) (string, bool) {
	if int64(idx) >= int64(len(p.blob)) {
		return "", false
	}
	s := p.blob[idx:]
	if end := strings.IndexByte(s, 0); end >= 0 {
		s = s[:end]
	}
	if !utf8.ValidString(s) { // idx not on a character boundary
		return "", false
	}
	return s, true
}

func (p *precompiled) transform(part string) (string, bool) {
	if len(part) == 1 && part[0] < 0x80 {
		r := &p.ascii[part[0]]
		return r.repl, r.ok
	}
	return p.lookup(part)
}

// normalize applies the map the way HF's Precompiled normalizer does (which
// copies sentencepiece's quirk): per extended grapheme cluster, a cluster
// shorter than 6 bytes is looked up whole and, on a hit, replaced whole;
// otherwise each character is looked up on its own.
func (p *precompiled) normalize(s string) string {
	var b strings.Builder
	copied := 0 // s[:copied] is accounted for in b (b unused while nothing changed)
	changed := false
	emit := func(start, end int, repl string) {
		if !changed {
			changed = true
			b.Grow(len(s) + len(repl))
			b.WriteString(s[:start])
		} else if copied < start {
			b.WriteString(s[copied:start])
		}
		b.WriteString(repl)
		copied = end
	}
	state := -1
	for i := 0; i < len(s); {
		var g string
		if c := s[i]; c < 0x80 && (i+1 == len(s) || (s[i+1] < 0x80 && !(c == '\r' && s[i+1] == '\n'))) {
			// Two ASCII bytes always have a grapheme boundary between them (except CR LF).
			g, state = s[i:i+1], -1
		} else {
			g, _, _, state = uniseg.FirstGraphemeClusterInString(s[i:], state)
		}
		if len(g) < 6 {
			if repl, ok := p.transform(g); ok {
				emit(i, i+len(g), repl)
				i += len(g)
				continue
			}
		}
		if _, n := utf8.DecodeRuneInString(g); n < len(g) { // several characters
			for j := 0; j < len(g); {
				_, n := utf8.DecodeRuneInString(g[j:])
				if repl, ok := p.transform(g[j : j+n]); ok {
					emit(i+j, i+j+n, repl)
				}
				j += n
			}
		}
		i += len(g)
	}
	if !changed {
		return s
	}
	b.WriteString(s[copied:])
	return b.String()
}
