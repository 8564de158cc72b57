package onnx

import (
	"context"
	"math"
	"os"
	"testing"
	"time"
)

// TestDevGPUParity embeds the same SciFact abstracts on the CPU and on
// $ENGRAM_BENCH_DEVICE (default cuda) through one ONNX Runtime library and
// compares the vectors: the GPU route (scripts/onnx/gpu_device_run.sh) pairs
// an ORT core with a CUDA provider of another release, so speed alone would
// not reveal a provider that computes garbage. It runs only with
// ENGRAM_PARITY=1 and reads the benchmarks' other ENGRAM_BENCH_* settings.
func TestDevGPUParity(t *testing.T) {
	if os.Getenv("ENGRAM_PARITY") != "1" {
		t.Skip("GPU parity check: set ENGRAM_PARITY=1 on a machine with a GPU (scripts/onnx/gpu_device_run.sh)")
	}
	dev := Device(os.Getenv("ENGRAM_BENCH_DEVICE"))
	if dev == "" || dev == DeviceCPU {
		dev = DeviceCUDA
	}
	texts := scifactTexts(t, envInt("ENGRAM_BENCH_TEXTS", 8))
	embed := func(d Device) [][]float32 {
		opts := benchOptions(t, 8, envInt("ENGRAM_BENCH_THREADS", 1), d)
		start := time.Now()
		e := openTiny(t, "tiny", opts)
		t.Logf("%s: opened in %v, provider %s", d, time.Since(start).Round(time.Millisecond), e.Provider())
		start = time.Now()
		v, err := e.Embed(context.Background(), texts)
		if err != nil {
			t.Fatalf("%s: Embed: %v", d, err)
		}
		t.Logf("%s: %d texts in %v", d, len(texts), time.Since(start).Round(time.Millisecond))
		return v
	}
	gpu := embed(dev) // first: fails fast when the provider cannot be set up
	cpu := embed(DeviceCPU)
	minCos, maxDiff := 1.0, 0.0
	for i := range cpu {
		var dot float64 // the vectors are L2-normalized: cosine = dot product
		for j := range cpu[i] {
			dot += float64(cpu[i][j]) * float64(gpu[i][j])
		}
		minCos = min(minCos, dot)
		maxDiff = max(maxDiff, maxAbsDiff(cpu[i], gpu[i]))
	}
	t.Logf("PARITY cpu vs %s: %d vectors of dim %d, min cosine %.6f, max |diff| %.3g", dev, len(cpu), len(cpu[0]), minCos, maxDiff)
	if math.IsNaN(minCos) || minCos < 0.99 {
		t.Errorf("%s vectors differ from the CPU's (min cosine %.6f)", dev, minCos)
	}
}
