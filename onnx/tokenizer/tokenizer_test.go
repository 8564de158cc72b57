package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// smallJSON builds a tokenizer.json with a hand-made Unigram vocabulary.
// Scores are chosen so the best segmentations are easy to work out.
func smallJSON(t testing.TB, edit func(m map[string]any)) []byte {
	t.Helper()
	vocab := [][]any{
		{"<s>", 0.0}, {"<pad>", 0.0}, {"</s>", 0.0}, {"<unk>", 0.0},
		{"▁", -2.0}, {"a", -3.0}, {"b", -3.0}, {"ab", -2.5}, {"▁ab", -1.0}, {"▁a", -2.0},
		{"c", -4.0}, {"<0x78>", -5.0}, {"<0x79>", -5.0}, {"<mask>", 0.0},
	}
	m := map[string]any{
		"version": "1.0",
		"added_tokens": []any{
			map[string]any{"id": 0, "content": "<s>", "special": true},
			map[string]any{"id": 2, "content": "</s>", "special": true},
			map[string]any{"id": 13, "content": "<mask>", "lstrip": true, "special": true},
		},
		"normalizer":    map[string]any{"type": "Replace", "pattern": map[string]any{"Regex": " {2,}"}, "content": " "},
		"pre_tokenizer": map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
		"post_processor": map[string]any{"type": "RobertaProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 0},
			"trim_offsets": true, "add_prefix_space": true},
		"model": map[string]any{"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": false},
	}
	if edit != nil {
		edit(m)
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func small(t testing.TB, edit func(m map[string]any)) *Tokenizer {
	t.Helper()
	tok, err := Parse(smallJSON(t, edit))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func model(m map[string]any) map[string]any { return m["model"].(map[string]any) }

func TestEncodeSmall(t *testing.T) {
	tok := small(t, nil)
	cases := []struct {
		text string
		want []int32
	}{
		{"", []int32{0, 2}},
		{"ab", []int32{0, 8, 2}},            // "▁ab" (-1) beats "▁a"+"b" (-5)
		{"ab  ab", []int32{0, 8, 8, 2}},     // runs of spaces collapse (Replace)
		{"abc", []int32{0, 8, 10, 2}},       //
		{"xyz", []int32{0, 4, 3, 2}},        // "▁" then x,y,z fused into one unk
		{"axy", []int32{0, 9, 3, 2}},        //
		{"<s>ab", []int32{0, 0, 8, 2}},      // added token in the text
		{"ab <mask>", []int32{0, 8, 13, 2}}, // lstrip: the space goes with <mask>
		{"ab<mask>b", []int32{0, 8, 13, 4, 6, 2}},
	}
	for _, c := range cases {
		e, err := tok.Encode(c.text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(e.IDs, c.want) {
			t.Errorf("%q: got %v %q, want %v", c.text, e.IDs, e.Tokens, c.want)
		}
		if len(e.AttentionMask) != len(e.IDs) || len(e.TypeIDs) != len(e.IDs) || len(e.Tokens) != len(e.IDs) {
			t.Errorf("%q: slice lengths differ: %d %d %d %d", c.text, len(e.IDs), len(e.AttentionMask), len(e.TypeIDs), len(e.Tokens))
		}
	}
	if e, _ := tok.Encode("xyz"); e.Tokens[2] != "xyz" {
		t.Errorf("fused unknown token is %q, want %q", e.Tokens[2], "xyz")
	}
}

func TestByteFallback(t *testing.T) {
	tok := small(t, func(m map[string]any) { model(m)["byte_fallback"] = true })
	for text, want := range map[string][]int32{
		"xy":  {0, 4, 11, 12, 2}, // both bytes have pieces
		"xyz": {0, 4, 3, 2},      // "z" has none: the whole fused token is unk
	} {
		e, err := tok.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(e.IDs, want) {
			t.Errorf("%q: got %v, want %v", text, e.IDs, want)
		}
	}
}

func TestPrependSchemes(t *testing.T) {
	for _, c := range []struct {
		pre  map[string]any
		text string
		want []int32
	}{
		{map[string]any{"type": "Metaspace", "prepend_scheme": "never"}, "ab", []int32{0, 7, 2}},
		{map[string]any{"type": "Metaspace", "prepend_scheme": "first"}, "ab<s>ab", []int32{0, 8, 0, 7, 2}},
		{map[string]any{"type": "Metaspace", "prepend_scheme": "always"}, "ab<s>ab", []int32{0, 8, 0, 8, 2}},
		{map[string]any{"type": "Metaspace", "add_prefix_space": false}, "ab", []int32{0, 7, 2}},
		{map[string]any{"type": "Metaspace", "split": false}, "ab ab", []int32{0, 8, 8, 2}},
		{map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "WhitespaceSplit"}, map[string]any{"type": "Metaspace"}}}, "ab\tab", []int32{0, 8, 8, 2}},
	} {
		tok := small(t, func(m map[string]any) { m["pre_tokenizer"] = c.pre })
		e, err := tok.Encode(c.text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(e.IDs, c.want) {
			t.Errorf("%v %q: got %v %q, want %v", c.pre, c.text, e.IDs, e.Tokens, c.want)
		}
	}
}

func TestTruncationAndPadding(t *testing.T) {
	tok := small(t, nil)
	tr, err := tok.WithTruncation(4)
	if err != nil {
		t.Fatal(err)
	}
	e, err := tr.Encode("ab ab ab")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.IDs, []int32{0, 8, 8, 2}) || !e.Truncated {
		t.Fatalf("truncated: got %v %v", e.IDs, e.Truncated)
	}
	if _, err := tok.WithTruncation(1); err == nil {
		t.Fatal("truncation below the special tokens accepted")
	}
	left := small(t, func(m map[string]any) { m["truncation"] = map[string]any{"max_length": 3, "direction": "Left"} })
	// "a b" is "▁a" "▁" "b"; the last model token is kept.
	if e, _ := left.Encode("a b"); !slices.Equal(e.IDs, []int32{0, 6, 2}) || !e.Truncated {
		t.Fatalf("left truncation: got %v %q", e.IDs, e.Tokens)
	}

	p, err := tok.WithPadding(Padding{Strategy: PadLongest, Multiple: 4, Left: true, TypeID: 0})
	if err != nil {
		t.Fatal(err)
	}
	encs, err := p.EncodeBatch([]string{"ab", "ab ab ab"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(encs[0].IDs, []int32{1, 1, 1, 1, 1, 0, 8, 2}) || !slices.Equal(encs[0].AttentionMask, []int32{0, 0, 0, 0, 0, 1, 1, 1}) {
		t.Fatalf("left padding: got %v %v", encs[0].IDs, encs[0].AttentionMask)
	}
	if len(encs[1].IDs) != 8 || encs[0].Tokens[0] != "<pad>" {
		t.Fatalf("batch: got %v %q", encs[1].IDs, encs[0].Tokens)
	}
	fixed, err := tok.WithPadding(Padding{Strategy: PadFixed, Length: 5})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := fixed.Encode("ab"); !slices.Equal(e.IDs, []int32{0, 8, 2, 1, 1}) {
		t.Fatalf("fixed padding: got %v", e.IDs)
	}
	for _, bad := range []Padding{{Strategy: PadFixed}, {Strategy: 7}, {Strategy: PadLongest, Multiple: -1}} {
		if _, err := tok.WithPadding(bad); err == nil {
			t.Errorf("padding %+v accepted", bad)
		}
	}
	if tok.PadID() != 1 || tok.VocabSize() != 14 || tok.SpecialTokens() != 2 {
		t.Fatalf("PadID %d VocabSize %d SpecialTokens %d", tok.PadID(), tok.VocabSize(), tok.SpecialTokens())
	}
}

func TestTemplateTypeIDs(t *testing.T) {
	tok := small(t, func(m map[string]any) {
		m["post_processor"] = map[string]any{
			"type": "TemplateProcessing",
			"single": []any{
				map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 1}},
				map[string]any{"SpecialToken": map[string]any{"id": "</s>", "type_id": 2}},
			},
			"special_tokens": map[string]any{
				"<s>":  map[string]any{"id": "<s>", "ids": []int{0}, "tokens": []string{"<s>"}},
				"</s>": map[string]any{"id": "</s>", "ids": []int{2}, "tokens": []string{"</s>"}},
			},
		}
	})
	e, err := tok.Encode("ab")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.TypeIDs, []int32{0, 1, 2}) {
		t.Fatalf("type ids %v", e.TypeIDs)
	}
}

func TestBadInput(t *testing.T) {
	tok := small(t, nil)
	if _, err := tok.Encode("ab\xff"); !errors.Is(err, ErrInvalidUTF8) || !strings.Contains(err.Error(), "offset 2") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	if _, err := tok.EncodeBatch([]string{"ok", "\xc3"}); !errors.Is(err, ErrInvalidUTF8) || !strings.Contains(err.Error(), "text 1") {
		t.Fatalf("invalid UTF-8 in batch: %v", err)
	}
	if encs, err := tok.EncodeBatch(nil); err != nil || len(encs) != 0 {
		t.Fatalf("empty batch: %v %v", encs, err)
	}
	noUnk := small(t, func(m map[string]any) { delete(model(m), "unk_id") })
	if _, err := noUnk.Encode("xyz"); err == nil || !strings.Contains(err.Error(), "no unk_id") {
		t.Fatalf("unknown text without unk_id: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	unsupported := []struct {
		component, typ string
		edit           func(m map[string]any)
	}{
		{"model", "BPE", func(m map[string]any) { model(m)["type"] = "BPE" }},
		{"normalizer", "NFKC", func(m map[string]any) { m["normalizer"] = map[string]any{"type": "NFKC"} }},
		{"normalizer", "Lowercase", func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "Lowercase"}}}
		}},
		{"pre_tokenizer", "ByteLevel", func(m map[string]any) { m["pre_tokenizer"] = map[string]any{"type": "ByteLevel"} }},
		{"post_processor", "ByteLevel", func(m map[string]any) { m["post_processor"] = map[string]any{"type": "ByteLevel"} }},
	}
	for _, c := range unsupported {
		_, err := Parse(smallJSON(t, c.edit))
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Component != c.component || ue.Type != c.typ || !strings.Contains(err.Error(), c.typ) {
			t.Errorf("%s %s: got %v", c.component, c.typ, err)
		}
	}
	bad := map[string]func(m map[string]any){
		"no model":     func(m map[string]any) { delete(m, "model") },
		"unk_id range": func(m map[string]any) { model(m)["unk_id"] = 99 },
		"empty vocab":  func(m map[string]any) { model(m)["vocab"] = []any{} },
		"vocab entry":  func(m map[string]any) { model(m)["vocab"] = []any{[]any{"a"}} },
		"bad regex": func(m map[string]any) {
			m["normalizer"].(map[string]any)["pattern"] = map[string]any{"Regex": "(?<=a)"}
		},
		"no pattern": func(m map[string]any) { m["normalizer"].(map[string]any)["pattern"] = map[string]any{} },
		"charsmap base64": func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Precompiled", "precompiled_charsmap": "!!"}
		},
		"charsmap short": func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Precompiled", "precompiled_charsmap": "AAA="}
		},
		"charsmap size": func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Precompiled", "precompiled_charsmap": "CAAAAA=="}
		},
		"charsmap missing": func(m map[string]any) { m["normalizer"] = map[string]any{"type": "Precompiled"} },
		"truncation short": func(m map[string]any) { m["truncation"] = map[string]any{"max_length": 1} },
		"replacement":      func(m map[string]any) { m["pre_tokenizer"].(map[string]any)["replacement"] = "ab" },
		"scheme":           func(m map[string]any) { m["pre_tokenizer"].(map[string]any)["prepend_scheme"] = "sometimes" },
		"added empty":      func(m map[string]any) { m["added_tokens"] = []any{map[string]any{"content": ""}} },
		"added no id":      func(m map[string]any) { m["added_tokens"] = []any{map[string]any{"content": "zz"}} },
		"template no $A": func(m map[string]any) {
			m["post_processor"] = map[string]any{"type": "TemplateProcessing", "single": []any{}}
		},
		"padding strategy": func(m map[string]any) { m["padding"] = map[string]any{"strategy": "Sometimes"} },
	}
	for name, edit := range bad {
		if _, err := Parse(smallJSON(t, edit)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, data := range []string{"", "{", "[]", "null", `{"model": null}`} {
		if _, err := Parse([]byte(data)); err == nil {
			t.Errorf("%q: accepted", data)
		}
	}
	if _, err := Load("/nonexistent/tokenizer.json"); err == nil {
		t.Error("missing file accepted")
	}
}

func TestTinyTokenizerFile(t *testing.T) {
	tok, err := Load(testdataDir + "/tiny/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 3002 || tok.PadID() != 1 {
		t.Fatalf("VocabSize %d PadID %d", tok.VocabSize(), tok.PadID())
	}
}

// TestConcurrent encodes from many goroutines (meaningful under -race).
func TestConcurrent(t *testing.T) {
	tok := loadVariant(t, "xlmr")
	strs := testStrings(t)[:400]
	want := make([][]int32, len(strs))
	for i, s := range strs {
		e, err := tok.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = e.IDs
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(strs); i += 2 {
				e, err := tok.Encode(strs[i])
				if err == nil && !slices.Equal(e.IDs, want[i]) {
					err = fmt.Errorf("string %d differs under concurrency", i)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestNormalizedAddedToken: a normalized=true added token is matched in the
// normalized text by its normalized form, a normalized=false one in the raw text.
func TestNormalizedAddedToken(t *testing.T) {
	tok := small(t, func(m map[string]any) {
		m["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"String": "Q"}, "content": "a"}
		m["added_tokens"] = []any{
			map[string]any{"id": 7, "content": "ab", "normalized": true},   // matches "Qb" after Replace
			map[string]any{"id": 10, "content": "Qc", "normalized": false}, // raw text only
		}
	})
	e, err := tok.Encode("Qb Qc")
	if err != nil {
		t.Fatal(err)
	}
	// "Qb " -> "ab " -> [ab] + " " -> "▁"; "Qc" is raw-matched before normalization.
	if want := []int32{0, 7, 4, 10, 2}; !slices.Equal(e.IDs, want) {
		t.Fatalf("got %v %q, want %v", e.IDs, e.Tokens, want)
	}
}

// TestVocabSizeCoversSpecialIDs: ids a post-processor adds outside the
// vocabulary still fit under VocabSize (it sizes embedding tables).
func TestVocabSizeCoversSpecialIDs(t *testing.T) {
	tok := small(t, func(m map[string]any) {
		m["post_processor"] = map[string]any{"type": "BertProcessing", "sep": []any{"[SEP]", 40}, "cls": []any{"[CLS]", 41}}
	})
	e, err := tok.Encode("ab")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.IDs, []int32{41, 8, 40}) || tok.VocabSize() != 42 {
		t.Fatalf("ids %v, VocabSize %d", e.IDs, tok.VocabSize())
	}
}
