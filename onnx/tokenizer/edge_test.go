package tokenizer

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Edge cases of the small hand-made vocabulary under configurations the
// trained goldens do not use (rstrip, single_word, overlapping added tokens,
// Prepend, Strip, no pre-tokenizer, truncation and padding from the file),
// checked against HF's output in testdata/tokenizer/edge/hf.json. To
// regenerate: go test -run TestEdgeCases ./onnx/tokenizer/ -args -edge.dump DIR,
// then node scripts/tokenizer/edge.js DIR testdata/tokenizer/edge/hf.json.
var edgeDump = flag.String("edge.dump", "", "write the edge-case tokenizer.json files and strings to this directory")

var edgeStrings = []string{"", " ", "ab<mask>ab", "ab <mask> ab", "ab<mask>  ab", " <mask>", "<mask> ", "<s>xab", "<s>ab",
	"ab ab", "abab", "a ab b", "_ab_", "1ab", "ab1", "é<mask>", "<mask><mask>", "  ab  ", "ab ab ab ab ab ab", "\tab",
	"ab\u00a0<mask>", "c<mask>c"}

func edgeVariants() map[string]func(m map[string]any) {
	return map[string]func(m map[string]any){
		"rstrip": func(m map[string]any) {
			m["added_tokens"] = []any{map[string]any{"id": 13, "content": "<mask>", "rstrip": true},
				map[string]any{"id": 0, "content": "<s>"}, map[string]any{"id": 14, "content": "<s>x"}}
			model(m)["vocab"] = append(model(m)["vocab"].([][]any), []any{"<s>x", 0.0})
		},
		"single_word": func(m map[string]any) {
			m["added_tokens"] = []any{map[string]any{"id": 13, "content": "<mask>", "single_word": true},
				map[string]any{"id": 7, "content": "ab", "single_word": true}}
		},
		"lstrip": func(m map[string]any) {},
		"prepend": func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
				map[string]any{"type": "Strip", "strip_left": true, "strip_right": false},
				map[string]any{"type": "Prepend", "prepend": "▁"}}}
			m["pre_tokenizer"] = nil
		},
		"file_config": func(m map[string]any) {
			m["truncation"] = map[string]any{"max_length": 5, "direction": "Left", "strategy": "LongestFirst", "stride": 0}
			m["padding"] = map[string]any{"strategy": map[string]any{"Fixed": 7}, "direction": "Left", "pad_to_multiple_of": nil,
				"pad_id": 1, "pad_type_id": 3, "pad_token": "<pad>"}
		},
	}
}

// edgeJSON is smallJSON with the variant applied and every added-token field
// written out (HF requires them all).
func edgeJSON(t testing.TB, edit func(m map[string]any)) []byte {
	return smallJSON(t, func(m map[string]any) {
		edit(m)
		for _, a := range m["added_tokens"].([]any) {
			am := a.(map[string]any)
			for _, k := range []string{"single_word", "lstrip", "rstrip", "normalized", "special"} {
				if _, ok := am[k]; !ok {
					am[k] = false
				}
			}
		}
	})
}

func TestEdgeCases(t *testing.T) {
	if *edgeDump != "" {
		if err := os.MkdirAll(*edgeDump, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, edit := range edgeVariants() {
			if err := os.WriteFile(filepath.Join(*edgeDump, name+".json"), edgeJSON(t, edit), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		data, _ := json.Marshal(edgeStrings)
		if err := os.WriteFile(filepath.Join(*edgeDump, "strings.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(testdataDir, "edge", "hf.json"))
	if err != nil {
		t.Fatal(err)
	}
	// variant -> per string: [ids, type ids, attention mask]
	var hf map[string][][3][]int32
	if err := json.Unmarshal(data, &hf); err != nil {
		t.Fatal(err)
	}
	for name, edit := range edgeVariants() {
		want, ok := hf[name]
		if !ok || len(want) != len(edgeStrings) {
			t.Fatalf("%s: hf.json has %d results for %d strings", name, len(want), len(edgeStrings))
		}
		tok, err := Parse(edgeJSON(t, edit))
		if err != nil {
			t.Fatal(name, err)
		}
		for i, s := range edgeStrings {
			e, err := tok.Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(e.IDs, want[i][0]) || !slices.Equal(e.TypeIDs, want[i][1]) || !slices.Equal(e.AttentionMask, want[i][2]) {
				t.Errorf("%s %q: got %v %v %v, HF %v", name, s, e.IDs, e.TypeIDs, e.AttentionMask, want[i])
			}
		}
	}
}
