package onnx

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// Benchmarks run the tiny test model, or the model.onnx named by
// $ENGRAM_BENCH_MODEL (e.g. the BGE-M3-sized one export_tiny.py makes with
// --preset bge-m3) with $ENGRAM_BENCH_MAXTOKENS (default 512) and
// $ENGRAM_BENCH_THREADS intra-op threads (default: ORT's choice) on
// $ENGRAM_BENCH_DEVICE (default cpu; see scripts/onnx/gpu_bench.sh). Texts are
// SciFact abstracts from shared/datasets. The tokenizer is the tiny test
// tokenizer when present (its ids fit any XLM-R vocabulary), else bytes.

// findDatasets walks up from the working directory to shared/datasets.
func findDatasets(tb testing.TB) string {
	dir, _ := os.Getwd()
	for {
		p := filepath.Join(dir, "shared", "datasets")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skip("shared/datasets not found above the working directory")
		}
		dir = parent
	}
}

func scifactTexts(tb testing.TB, n int) []string {
	f, err := os.Open(filepath.Join(findDatasets(tb), "text", "scifact", "corpus.jsonl.gz"))
	if err != nil {
		tb.Skipf("SciFact corpus: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<22)
	var texts []string
	for sc.Scan() && len(texts) < n {
		var doc struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			tb.Fatal(err)
		}
		texts = append(texts, doc.Title+"\n"+doc.Text)
	}
	return texts
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// benchOptions are the options the benchmarks and TestDevGPUParity open
// with: $ENGRAM_BENCH_MODEL with $ENGRAM_BENCH_MAXTOKENS when set (else
// the tiny test model), and the tiny tokenizer, whose ids are valid for
// both.
func benchOptions(tb testing.TB, maxBatch, threads int, dev Device) Options {
	opts := Options{MaxBatch: maxBatch, BatchTokens: 1 << 20, IntraOpThreads: threads, Device: dev}
	if m := os.Getenv("ENGRAM_BENCH_MODEL"); m != "" {
		opts.ModelPath = m
		opts.MaxTokens = envInt("ENGRAM_BENCH_MAXTOKENS", 512)
	}
	tok := filepath.Join(repoRoot(tb), "testdata", "tokenizer", "tiny", "tokenizer.json")
	if _, err := os.Stat(tok); err == nil {
		opts.TokenizerPath = tok
	}
	return opts
}

func openBench(b *testing.B, maxBatch int) *Embedder {
	opts := benchOptions(b, maxBatch, envInt("ENGRAM_BENCH_THREADS", 0), Device(os.Getenv("ENGRAM_BENCH_DEVICE")))
	start := time.Now()
	e := openTiny(b, "tiny", opts)
	b.Logf("opened in %v: fingerprint %s, provider %s", time.Since(start).Round(time.Millisecond), e.Fingerprint(), e.Provider())
	return e
}

// BenchmarkEmbed embeds $ENGRAM_BENCH_TEXTS (default 128) abstracts per op and reports throughput and the
// Go side's share (tokenize + tensors + pooling) of the ORT run time.
func BenchmarkEmbed(b *testing.B) {
	texts := scifactTexts(b, envInt("ENGRAM_BENCH_TEXTS", 128))
	for _, batch := range []int{1, 8, 32} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			e := openBench(b, batch)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := e.Embed(context.Background(), texts); err != nil {
					b.Fatal(err)
				}
			}
			el := time.Since(start).Seconds()
			st := e.Stats()
			b.ReportMetric(float64(st.Texts)/el, "embeddings/s")
			b.ReportMetric(float64(st.Tokens)/el, "tokens/s")
			b.ReportMetric(100*float64(st.Tokenize+st.Prepare+st.Pool)/float64(st.Run), "go_overhead_%")
			b.ReportMetric(100*float64(st.Tokenize)/float64(st.Run), "tokenize_%")
			b.ReportMetric(float64(st.PaddedTokens)/float64(st.Tokens), "pad_ratio")
		})
	}
}

// BenchmarkEmbedQuery embeds one short query per op (single-query latency).
func BenchmarkEmbedQuery(b *testing.B) {
	e := openBench(b, 1)
	q := "What is the role of the immune system in tumor suppression?"
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := e.Embed(context.Background(), []string{q}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
}
