package tokenizer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"unicode/utf8"
)

// miniCharsmap builds a valid precompiled_charsmap by hand: a darts trie with
// the single key "A" whose replacement is "a".
func miniCharsmap() []byte {
	units := make([]uint32, 66)
	units[0] = 1 << 10             // root, offset 1
	units[64] = 1<<10 | 1<<8 | 'A' // 1^'A' = 64: label 'A', has a leaf, offset 1
	units[65] = 1 << 31            // 64^1: leaf, value 0 (offset in the blob)
	out := binary.LittleEndian.AppendUint32(nil, uint32(4*len(units)))
	for _, u := range units {
		out = binary.LittleEndian.AppendUint32(out, u)
	}
	return append(out, "a\x00"...)
}

func TestPrecompiledQuirks(t *testing.T) {
	p, err := parsePrecompiled(miniCharsmap())
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"xAy":                 "xay",
		"A\u0301":             "a",                   // cluster < 6 bytes: replaced whole, accent dropped
		"A\u0301\u0301":       "a",                   // 5 bytes: still replaced whole
		"A\u0301\u0302\u0303": "a\u0301\u0302\u0303", // 7 bytes: per character
		"\r\nA":               "\r\na",
		"BCD":                 "BCD",
	} {
		if got := p.normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

var (
	fuzzOnce sync.Once
	fuzzTok  *Tokenizer
	fuzzErr  error
)

// FuzzEncode checks that no text panics the xlmr tokenizer and that every
// encoding is well formed.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", " ", "cafe\u0301", "<s>", " <mask> ", "\xff", "👩‍👩‍👧‍👦", "Ａ\u0301", "▁▁", "a\x00b", "\r\n\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzOnce.Do(func() { fuzzTok, fuzzErr = Parse(tokenizerJSON(t, "xlmr")) })
		if fuzzErr != nil {
			t.Fatal(fuzzErr)
		}
		tok, err := fuzzTok.WithTruncation(16)
		if err != nil {
			t.Fatal(err)
		}
		e, err := tok.Encode(s)
		if !utf8.ValidString(s) {
			if err == nil {
				t.Fatal("invalid UTF-8 accepted")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		n := len(e.IDs)
		if n < 2 || n > 16 || len(e.TypeIDs) != n || len(e.AttentionMask) != n || len(e.Tokens) != n {
			t.Fatalf("malformed encoding %+v", e)
		}
		if e.IDs[0] != 0 || e.IDs[n-1] != 2 {
			t.Fatalf("special tokens missing: %v", e.IDs)
		}
		for _, id := range e.IDs {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("id %d out of range", id)
			}
		}
		e2, _ := tok.Encode(s)
		if !slices.Equal(e.IDs, e2.IDs) {
			t.Fatal("not deterministic")
		}
	})
}

// FuzzParse feeds arbitrary bytes (seeded with valid small files) to Parse
// and encodes with whatever parses.
func FuzzParse(f *testing.F) {
	f.Add(smallJSON(f, nil), "ab <mask> xyz")
	f.Add(smallJSON(f, func(m map[string]any) { model(m)["byte_fallback"] = true }), "xy")
	f.Add(smallJSON(f, func(m map[string]any) {
		m["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{map[string]any{"type": "WhitespaceSplit"}, map[string]any{"type": "Metaspace", "prepend_scheme": "first"}}}
	}), "a b")
	f.Add([]byte(`{"model":{"type":"Unigram","vocab":[["a",-1]],"unk_id":0},"padding":{"strategy":{"Fixed":4}}}`), "aa")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tok, err := Parse(data)
		if err != nil {
			return
		}
		if encs, err := tok.EncodeBatch([]string{text, "a"}); err == nil && len(encs) != 2 {
			t.Fatal("wrong batch size")
		}
	})
}

// FuzzPrecompiled decodes arbitrary charsmaps and normalizes with them.
func FuzzPrecompiled(f *testing.F) {
	f.Add(miniCharsmap(), "xAy A\u0301")
	f.Add([]byte{4, 0, 0, 0, 0, 0, 0, 0}, "abc")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		p, err := parsePrecompiled(data)
		if err != nil {
			return
		}
		if out := p.normalize(text); utf8.ValidString(text) && !utf8.ValidString(out) {
			t.Fatalf("normalize(%q) = %q is not valid UTF-8", text, out)
		}
	})
}

// refVocab decodes a vocabulary with encoding/json, as the reference for
// parseVocab.
func refVocab(b []byte) ([]vocabEntry, bool) {
	var entries []json.RawMessage
	if json.Unmarshal(b, &entries) != nil || entries == nil {
		return nil, false
	}
	out := []vocabEntry{}
	for _, e := range entries {
		var pair []json.RawMessage
		if json.Unmarshal(e, &pair) != nil || len(pair) != 2 {
			return nil, false
		}
		p, s := bytes.TrimSpace(pair[0]), bytes.TrimSpace(pair[1])
		if len(p) == 0 || p[0] != '"' || len(s) == 0 || s[0] == 'n' {
			return nil, false
		}
		var v vocabEntry
		if json.Unmarshal(p, &v.piece) != nil || json.Unmarshal(s, &v.score) != nil {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// FuzzParseVocab checks the hand-rolled vocabulary scanner against
// encoding/json: same acceptance, same pieces and scores.
func FuzzParseVocab(f *testing.F) {
	for _, s := range []string{`[["a",-1],["\u00e9",2.5e-3]]`, `[]`, `[["x\"y", 0]]`, " [ [ \"a\" , 1 ] ]\n", `[["\ud83d\ude00", -1e300]]`, `[["a",1],]`, `[[null,1]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseVocab(b)
		want, ok := refVocab(b)
		if (err == nil) != ok {
			t.Fatalf("parseVocab(%q) err=%v, encoding/json ok=%v", b, err, ok)
		}
		if ok && !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("parseVocab(%q) = %v, want %v", b, got, want)
		}
	})
}
