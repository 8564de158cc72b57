package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// BenchmarkEncode encodes the golden strings one by one on one goroutine
// (truncation off) and reports tokens/s; scripts/tokenizer/bench.sh runs HF
// tokenizers on the same strings for comparison.
func BenchmarkEncode(b *testing.B) {
	for _, v := range []string{"xlmr", "tiny"} {
		b.Run("tokenizer="+v, func(b *testing.B) {
			tok := loadVariant(b, v).WithoutTruncation()
			strs := testStrings(b)
			var bytes int64
			for _, s := range strs {
				bytes += int64(len(s))
			}
			b.SetBytes(bytes)
			b.ReportAllocs()
			tokens := 0
			start := time.Now()
			for b.Loop() {
				for _, s := range strs {
					e, err := tok.Encode(s)
					if err != nil {
						b.Fatal(err)
					}
					tokens += len(e.IDs)
				}
			}
			b.ReportMetric(float64(tokens)/time.Since(start).Seconds(), "tokens/s")
		})
	}
}

// BenchmarkParse loads a BGE-M3-sized tokenizer.json: the xlmr file with its
// vocabulary grown to 250,002 pieces (synthetic, fixed seed).
func BenchmarkParse(b *testing.B) {
	var m map[string]any
	if err := json.Unmarshal(tokenizerJSON(b, "xlmr"), &m); err != nil {
		b.Fatal(err)
	}
	mdl := m["model"].(map[string]any)
	vocab := mdl["vocab"].([]any)
	seen := map[string]bool{}
	for _, v := range vocab {
		seen[v.([]any)[0].(string)] = true
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for len(vocab) < 250002 {
		var sb strings.Builder
		if rng.IntN(2) == 0 {
			sb.WriteString("▁")
		}
		for range 1 + rng.IntN(6) {
			if rng.IntN(3) == 0 {
				sb.WriteRune(rune(0x4e00 + rng.IntN(20000)))
			} else {
				sb.WriteByte(byte('a' + rng.IntN(26)))
			}
		}
		if p := sb.String(); !seen[p] {
			seen[p] = true
			vocab = append(vocab, []any{p, -5 - 10*rng.Float64()})
		}
	}
	mdl["vocab"] = vocab
	data, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		tok, err := Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		if tok.VocabSize() != 250002 {
			b.Fatalf("vocab size %d", tok.VocabSize())
		}
	}
}
