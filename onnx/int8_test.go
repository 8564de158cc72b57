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

// TestInt8Parity runs testdata/model/tiny-int8 (tiny's MatMul weights rewritten into
// com.microsoft DynamicQuantizeMatMul by scripts/onnx/quantize_int8.py, 7-bit weights) and
// checks that ORT executes it, that its vectors stay within cosine 0.99 of the fp32 model's on
// the same inputs, that they are not simply the fp32 vectors (the quantized graph is what
// ran), and that the two models' fingerprints differ. With full-range 8-bit weights the cosine
// fell to 0.987 on AVX2 CPUs without VNNI, where ORT's u8*s8 kernel saturates int16 sums
// (quantize_int8.py's WEIGHT_FORMATS); the BGE-M3-sized figures are in bench/results/onnx.md.
func TestInt8Parity(t *testing.T) {
	tok := filepath.Join(repoRoot(t), "testdata", "tokenizer", "tiny", "tokenizer.json")
	fp32 := openTiny(t, "tiny", Options{TokenizerPath: tok, MaxTokens: 64})
	i8 := openTiny(t, "tiny-int8", Options{TokenizerPath: tok, MaxTokens: 64})
	if fp32.Fingerprint() == i8.Fingerprint() {
		t.Fatal("int8 and fp32 models share a fingerprint")
	}
	if i8.Dim() != fp32.Dim() {
		t.Fatalf("int8 dim %d, fp32 %d", i8.Dim(), fp32.Dim())
	}
	texts := append(sample, "Local-first long-term memory for agents.", "多言語のテキスト and English")
	a, err := fp32.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
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
	t.Logf("int8 vs fp32 over %d texts: min cosine %.5f, max |diff| %.2g", len(texts), minCos, maxDiff)
	if minCos < 0.99 {
		t.Fatalf("int8 min cosine to fp32 %.5f < 0.99", minCos)
	}
	if maxDiff == 0 {
		t.Fatal("int8 vectors equal the fp32 ones bit for bit: the quantized graph did not run")
	}
}
