package tokenizer

import (
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
