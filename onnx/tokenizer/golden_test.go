package tokenizer

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The goldens are HuggingFace tokenizers' output (scripts/tokenizer/golden.js)
// for the strings in testdata/tokenizer/strings.jsonl.gz.
const testdataDir = "../../testdata/tokenizer"

// variants are the tokenizer configurations under testdata/tokenizer.
var variants = []string{"xlmr", "tiny", "legacy", "first", "never", "bytefb"}

func readGz(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readLines[T any](t testing.TB, path string) []T {
	t.Helper()
	var out []T
	sc := bufio.NewScanner(bytesReader(readGz(t, path)))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func testStrings(t testing.TB) []string {
	return readLines[string](t, filepath.Join(testdataDir, "strings.jsonl.gz"))
}

func tokenizerJSON(t testing.TB, variant string) []byte {
	t.Helper()
	p := filepath.Join(testdataDir, variant, "tokenizer.json")
	if data, err := os.ReadFile(p); err == nil {
		return data
	}
	return readGz(t, p+".gz")
}

func loadVariant(t testing.TB, variant string) *Tokenizer {
	t.Helper()
	tok, err := Parse(tokenizerJSON(t, variant))
	if err != nil {
		t.Fatalf("%s: %v", variant, err)
	}
	return tok
}

type golden struct {
	I     int     `json:"i"`
	IDs   []int32 `json:"ids"`
	T64   []int32 `json:"t64"`
	T8192 []int32 `json:"t8192"`
}

// TestGolden compares every golden string, with truncation off, at 64 tokens
// and at the default 8192: 100% of them must match HF.
func TestGolden(t *testing.T) {
	strs := testStrings(t)
	if len(strs) < 10000 {
		t.Fatalf("only %d golden strings", len(strs))
	}
	total := 0
	for _, v := range variants {
		t.Run(v, func(t *testing.T) {
			def := loadVariant(t, v)
			if def.MaxLength() != DefaultMaxLength {
				t.Fatalf("default max length %d, want %d", def.MaxLength(), DefaultMaxLength)
			}
			off := def.WithoutTruncation()
			t64, err := def.WithTruncation(64)
			if err != nil {
				t.Fatal(err)
			}
			goldens := readLines[golden](t, filepath.Join(testdataDir, v, "golden.jsonl.gz"))
			step := 1
			if testing.Short() && v != "xlmr" {
				step = 4 // the race detector is slow; xlmr stays complete
			}
			bad, truncated := 0, 0
			for k := 0; k < len(goldens); k += step {
				g := goldens[k]
				text := strs[g.I]
				for _, c := range []struct {
					name string
					tok  *Tokenizer
					want []int32
				}{{"off", off, nil}, {"64", t64, g.T64}, {"8192", def, g.T8192}} {
					want := c.want // nil: the same as without truncation
					if want == nil {
						want = g.IDs
					} else {
						truncated++
					}
					e, err := c.tok.Encode(text)
					if err != nil {
						t.Fatalf("string %d: %v", g.I, err)
					}
					if !slices.Equal(e.IDs, want) || e.Truncated != (c.want != nil) {
						if bad++; bad <= 5 {
							t.Errorf("string %d %q truncation %s:\n got %v (truncated %v)\nwant %v", g.I, clip(text), c.name, clip(fmt.Sprint(e.IDs)), e.Truncated, clip(fmt.Sprint(want)))
						}
					}
				}
			}
			total += len(goldens) / step
			if bad > 0 {
				t.Fatalf("%d of %d encodings differ from HuggingFace", bad, 3*len(goldens)/step)
			}
			if truncated == 0 {
				t.Fatal("no golden string exercised truncation")
			}
		})
	}
	t.Logf("%d goldens matched", total)
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

type paddingGolden struct {
	Padding string    `json:"padding"`
	Batch   []int     `json:"batch"`
	IDs     [][]int32 `json:"ids"`
	Mask    [][]int32 `json:"mask"`
	Types   [][]int32 `json:"types"`
}

func TestGoldenPadding(t *testing.T) {
	strs := testStrings(t)
	base := loadVariant(t, "xlmr")
	settings := map[string]Padding{
		"longest":            {Strategy: PadLongest},
		"longest-mult8-left": {Strategy: PadLongest, Multiple: 8, Left: true},
		"fixed40":            {Strategy: PadFixed, Length: 40},
	}
	goldens := readLines[paddingGolden](t, filepath.Join(testdataDir, "xlmr", "padding.jsonl.gz"))
	if len(goldens) == 0 {
		t.Fatal("no padding goldens")
	}
	for _, g := range goldens {
		p, ok := settings[g.Padding]
		if !ok {
			t.Fatalf("unknown padding setting %q", g.Padding)
		}
		tok, err := base.WithPadding(p)
		if err != nil {
			t.Fatal(err)
		}
		texts := make([]string, len(g.Batch))
		for i, k := range g.Batch {
			texts[i] = strs[k]
		}
		encs, err := tok.EncodeBatch(texts)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range encs {
			if !slices.Equal(e.IDs, g.IDs[i]) || !slices.Equal(e.AttentionMask, g.Mask[i]) || !slices.Equal(e.TypeIDs, g.Types[i]) {
				t.Fatalf("%s batch %v item %d:\n got %v %v %v\nwant %v %v %v", g.Padding, g.Batch, i, e.IDs, e.AttentionMask, e.TypeIDs, g.IDs[i], g.Mask[i], g.Types[i])
			}
			if len(e.Tokens) != len(e.IDs) {
				t.Fatalf("%d tokens for %d ids", len(e.Tokens), len(e.IDs))
			}
		}
	}
}

// TestGoldenCoversGraphemeQuirk makes sure the goldens exercise the
// Precompiled normalizer's whole-cluster replacement (see doc.go): strings
// where it gives another result than a character-by-character pass.
func TestGoldenCoversGraphemeQuirk(t *testing.T) {
	seq, ok := loadVariant(t, "xlmr").norm.(sequenceNormalizer)
	if !ok {
		t.Fatal("xlmr normalizer is not a Sequence")
	}
	p, ok := seq[0].(*precompiled)
	if !ok {
		t.Fatal("xlmr normalizer does not start with Precompiled")
	}
	perChar := func(s string) string {
		var b []byte
		for _, r := range s {
			c := string(r)
			if repl, ok := p.transform(c); ok {
				c = repl
			}
			b = append(b, c...)
		}
		return string(b)
	}
	n := 0
	for _, s := range testStrings(t) {
		if p.normalize(s) != perChar(s) {
			n++
		}
	}
	t.Logf("%d golden strings depend on whole-cluster replacement", n)
	if n < 100 {
		t.Fatalf("only %d golden strings exercise whole-cluster replacement", n)
	}
}
