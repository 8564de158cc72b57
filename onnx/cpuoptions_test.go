//go:build unix

package onnx

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	ort "github.com/yalue/onnxruntime_go"
)

// TestCPUOptions measures ONNX Runtime's CPU settings one at a time against Open's defaults
// (graph optimisation ORT_ENABLE_ALL, $ENGRAM_BENCH_THREADS or 2 intra-op threads, sequential
// execution, CPU arena and memory patterns on, no thread spinning, length-sorted batches
// padded at most 1.1x) on
// $ENGRAM_BENCH_MODEL:
//
//	ENGRAM_OPTIONS_BENCH=1 ENGRAM_BENCH_MODEL=/tmp/bge-m3-random/model.onnx \
//	  go test -run TestCPUOptions -v -timeout 60m ./onnx/
//
// The default session stays open; each variant gets a session of its own, and the two take
// turns (who goes first alternates) on $ENGRAM_OPTIONS_ROUNDS (default 6) rounds of one
// 8-32-token query and one mixed batch ($ENGRAM_OPTIONS_PAIRS, default 8, queries and as many
// 300-character chunks, MaxBatch 4), so load on a shared machine hits both alike. Ratios below 1 favour the variant. Every variant
// must give the default's vectors (cosine >= 0.999): a setting may change speed, not results.
// $ENGRAM_OPTIONS_ONLY (comma-separated names) runs a subset.
func TestCPUOptions(t *testing.T) {
	if os.Getenv("ENGRAM_OPTIONS_BENCH") == "" || os.Getenv("ENGRAM_BENCH_MODEL") == "" {
		t.Skip("set ENGRAM_OPTIONS_BENCH=1 and ENGRAM_BENCH_MODEL")
	}
	threads := envInt("ENGRAM_BENCH_THREADS", 2)
	base := benchOptions(t, 4, threads, DeviceCPU)
	def := openTiny(t, "", base)

	abstracts := scifactTexts(t, 64)
	var queries, chunks []string
	for i, a := range abstracts {
		words := strings.Fields(a)
		queries = append(queries, strings.Join(words[:min(len(words), 6+(i*5)%20)], " "))
		chunks = append(chunks, chunk300(a)...)
	}
	var mixed []string // alternating short and long: the case length buckets are for
	for i := range envInt("ENGRAM_OPTIONS_PAIRS", 8) {
		mixed = append(mixed, queries[len(queries)-1-i], chunks[i])
	}

	cfg := func(key, val string) func(*ort.SessionOptions) error {
		return func(so *ort.SessionOptions) error { return so.AddSessionConfigEntry(key, val) }
	}
	level := func(l ort.GraphOptimizationLevel) func(*ort.SessionOptions) error {
		return func(so *ort.SessionOptions) error { return so.SetGraphOptimizationLevel(l) }
	}
	variants := []struct {
		name string
		set  func(*Options)
	}{
		{"opt-extended", func(o *Options) { o.tune = level(ort.GraphOptimizationLevelEnableExtended) }},
		{"opt-basic", func(o *Options) { o.tune = level(ort.GraphOptimizationLevelEnableBasic) }},
		{"opt-disabled", func(o *Options) { o.tune = level(ort.GraphOptimizationLevelDisableAll) }},
		{"intra-1", func(o *Options) { o.IntraOpThreads = 1 }},
		{"intra-4", func(o *Options) { o.IntraOpThreads = 4 }},
		{"inter-2-parallel", func(o *Options) {
			o.InterOpThreads = 2
			o.tune = func(so *ort.SessionOptions) error { return so.SetExecutionMode(ort.ExecutionModeParallel) }
		}},
		{"no-arena", func(o *Options) { o.tune = func(so *ort.SessionOptions) error { return so.SetCpuMemArena(false) } }},
		{"no-mem-pattern", func(o *Options) { o.tune = func(so *ort.SessionOptions) error { return so.SetMemPattern(false) } }},
		{"spinning", func(o *Options) { o.Spin = true }},
		{"denormal-as-zero", func(o *Options) { o.tune = cfg("session.set_denormal_as_zero", "1") }},
		{"dynamic-block-base-4", func(o *Options) { o.tune = cfg("session.dynamic_block_base", "4") }},
		{"unsorted-batches", func(o *Options) { o.inOrder = true }},
	}
	only := map[string]bool{}
	for _, n := range strings.Split(os.Getenv("ENGRAM_OPTIONS_ONLY"), ",") {
		if n != "" {
			only[n] = true
		}
	}
	rounds := envInt("ENGRAM_OPTIONS_ROUNDS", 6)
	ctx := context.Background()
	t.Logf("model %s, default %d intra-op threads, %d rounds per variant", base.ModelPath, threads, rounds)
	t.Logf("| variant | query p50 ms (default / variant) | p50 ratio | query CPU ratio | mixed batch wall ms (default / variant) | wall ratio | CPU ratio | load |")
	t.Logf("|---|---|---|---|---|---|---|---|")
	for _, v := range variants {
		if len(only) > 0 && !only[v.name] {
			continue
		}
		o := base
		v.set(&o)
		ve, err := Open(o)
		if err != nil {
			t.Errorf("%s: %v", v.name, err)
			continue
		}
		type side struct {
			e                 *Embedder
			qWall, qCPU       []time.Duration
			mixWall, mixCPU   time.Duration
			qVecs, mixVecs    [][]float32
			padded, realToken int64
		}
		sides := []*side{{e: def}, {e: ve}}
		for _, s := range sides { // warm-up
			if _, err := s.e.Embed(ctx, queries[:1]); err != nil {
				t.Fatal(err)
			}
		}
		for r := range rounds {
			for k := range sides {
				s := sides[(r+k)%2]
				c0, w0 := cpuTime(), time.Now()
				qv, err := s.e.Embed(ctx, queries[r%len(queries):r%len(queries)+1])
				if err != nil {
					t.Fatal(err)
				}
				s.qWall, s.qCPU = append(s.qWall, time.Since(w0)), append(s.qCPU, cpuTime()-c0)
				st0 := s.e.Stats()
				c0, w0 = cpuTime(), time.Now()
				mv, err := s.e.Embed(ctx, mixed)
				if err != nil {
					t.Fatal(err)
				}
				s.mixWall += time.Since(w0)
				s.mixCPU += cpuTime() - c0
				st1 := s.e.Stats()
				s.padded += st1.PaddedTokens - st0.PaddedTokens
				s.realToken += st1.Tokens - st0.Tokens
				if r == 0 {
					s.qVecs, s.mixVecs = qv, mv
				}
			}
		}
		ve.Close()
		minCos := 1.0
		for i := range sides[0].qVecs {
			minCos = min(minCos, cosine(sides[0].qVecs[i], sides[1].qVecs[i]))
		}
		for i := range sides[0].mixVecs {
			minCos = min(minCos, cosine(sides[0].mixVecs[i], sides[1].mixVecs[i]))
		}
		d, x := sides[0], sides[1]
		ms := func(dd time.Duration) string { return fmt.Sprintf("%.1f", float64(dd.Microseconds())/1000) }
		rt := func(a, b time.Duration) string { return fmt.Sprintf("%.2f", float64(b)/float64(a)) }
		pad := ""
		if v.name == "unsorted-batches" {
			pad = fmt.Sprintf(" (padded/real tokens %.2f vs %.2f)", float64(d.padded)/float64(d.realToken), float64(x.padded)/float64(x.realToken))
		}
		n := time.Duration(rounds)
		t.Logf("| %s | %s / %s | %s | %s | %s / %s | %s | %s | %s |%s", v.name,
			ms(pctl(d.qWall, 50)), ms(pctl(x.qWall, 50)), rt(pctl(d.qWall, 50), pctl(x.qWall, 50)), rt(sumDur(d.qCPU), sumDur(x.qCPU)),
			ms(d.mixWall/n), ms(x.mixWall/n), rt(d.mixWall, x.mixWall), rt(d.mixCPU, x.mixCPU), loadAvg(), pad)
		if minCos < 0.999 {
			t.Errorf("%s: min cosine to the default's vectors %.5f < 0.999", v.name, minCos)
		}
	}
}
