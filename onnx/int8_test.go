package onnx

import (
	"context"
	"path/filepath"
	"testing"
)

// cosine of two vectors (both L2-normalized by the embedder, so the dot product).
func cosine(a, b []float32) float64 {
	var d float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
	}
	return d
}

// TestInt8Parity runs the int8 rewrites of tiny that scripts/onnx/quantize_int8.py writes:
// testdata/model/tiny-int8 (MatMul weights as com.microsoft DynamicQuantizeMatMul, 7-bit
// weights) and testdata/model/tiny-nbits8 (com.microsoft MatMulNBits, 8-bit weights in blocks
// of 32, int8 compute: --op nbits --bits 8 --block 32). For each it checks that ORT executes it,
// that its vectors stay within cosine 0.99 of the fp32 model's on the same inputs, that they are
// not simply the fp32 vectors (the quantized graph is what ran), and that the fingerprints
// differ. With full-range 8-bit DynamicQuantizeMatMul weights the cosine fell to 0.987 on AVX2
// CPUs without VNNI, where ORT's u8*s8 kernel saturates int16 sums (quantize_int8.py's
// WEIGHT_FORMATS); the BGE-M3-sized figures are in bench/results/onnx.md.
func TestInt8Parity(t *testing.T) {
	tok := filepath.Join(repoRoot(t), "testdata", "tokenizer", "tiny", "tokenizer.json")
	fp32 := openTiny(t, "tiny", Options{TokenizerPath: tok, MaxTokens: 64})
	texts := append(sample, "Local-first long-term memory for agents.", "多言語のテキスト and English")
	a, err := fp32.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tiny-int8", "tiny-nbits8"} {
		t.Run(name, func(t *testing.T) {
			i8 := openTiny(t, name, Options{TokenizerPath: tok, MaxTokens: 64})
			if fp32.Fingerprint() == i8.Fingerprint() {
				t.Fatal("int8 and fp32 models share a fingerprint")
			}
			if i8.Dim() != fp32.Dim() {
				t.Fatalf("int8 dim %d, fp32 %d", i8.Dim(), fp32.Dim())
			}
			b, err := i8.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			minCos, maxDiff := 1.0, 0.0
			for i := range texts {
				minCos = min(minCos, cosine(a[i], b[i]))
				maxDiff = max(maxDiff, maxAbsDiff(a[i], b[i]))
			}
			t.Logf("%s vs fp32 over %d texts: min cosine %.5f, max |diff| %.2g", name, len(texts), minCos, maxDiff)
			if minCos < 0.99 {
				t.Fatalf("%s min cosine to fp32 %.5f < 0.99", name, minCos)
			}
			if maxDiff == 0 {
				t.Fatal("int8 vectors equal the fp32 ones bit for bit: the quantized graph did not run")
			}
		})
	}
}
