//go:build unix

package onnx

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSideBySideTorch times engram's embedder against PyTorch on the same model and
// threads, interleaved query by query so that load on a shared machine hits both alike:
// $ENGRAM_BENCH_MODEL (the export of scripts/onnx/export_tiny.py --preset bge-m3, or its
// int8 rewrite by quantize_int8.py) here, and scripts/onnx/torch_worker.py rebuilding the
// same preset from the same seed in fp32 there (Debian's python3-torch). It reports
// query latency (p50/p99, wall and CPU time) for 8-32-token queries, throughput for
// 300-character chunks, the ratios, and the cosine of engram's vectors to PyTorch's fp32
// ones, which must stay >= 0.99 (about 1.0 for the fp32 export: the same weights).
//
//	ENGRAM_SIDEBYSIDE=1 ENGRAM_BENCH_MODEL=/tmp/bge-m3-random/model.onnx \
//	  go test -run TestSideBySideTorch -v -timeout 30m ./onnx/
//
// $ENGRAM_SIDEBYSIDE is the python3 to run (1: /usr/bin/python3); $ENGRAM_BENCH_THREADS
// the threads on both sides (default: all CPUs); $ENGRAM_SIDEBYSIDE_QUERIES (40),
// _CHUNKS (32, per round), _ROUNDS (2) and _BATCH (16, both sides) size the run.
// scripts/onnx/side_by_side.sh runs it for fp32 and int8.
func TestSideBySideTorch(t *testing.T) {
	py := os.Getenv("ENGRAM_SIDEBYSIDE")
	if py == "" || os.Getenv("ENGRAM_BENCH_MODEL") == "" {
		t.Skip("set ENGRAM_SIDEBYSIDE=1 and ENGRAM_BENCH_MODEL (see scripts/onnx/side_by_side.sh)")
	}
	if py == "1" {
		py = "/usr/bin/python3"
	}
	threads := envInt("ENGRAM_BENCH_THREADS", runtime.NumCPU())
	batch := envInt("ENGRAM_SIDEBYSIDE_BATCH", 16)
	opts := benchOptions(t, batch, threads, DeviceCPU)
	e := openTiny(t, "", opts)
	tok := e.tok

	w := startTorch(t, py, os.Getenv("ENGRAM_SIDEBYSIDE_PRESET"), threads)

	// Queries of 8-32 tokens: prefixes of SciFact abstracts grown word by word.
	nQ := envInt("ENGRAM_SIDEBYSIDE_QUERIES", 40)
	abstracts := scifactTexts(t, nQ+64)
	var queries []string
	var qids [][]int32
	for i := 0; len(queries) < nQ && i < len(abstracts); i++ {
		target := 8 + (i*7)%25
		words := strings.Fields(abstracts[i])
		for n := 1; n <= len(words); n++ {
			q := strings.Join(words[:n], " ")
			ids, _, err := tok.Encode(q)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) >= target {
				if len(ids) <= 32 {
					queries, qids = append(queries, q), append(qids, ids)
				}
				break
			}
		}
	}
	ctx := context.Background()
	for i := range 2 { // warm-up, both sides
		if _, err := e.Embed(ctx, queries[i:i+1]); err != nil {
			t.Fatal(err)
		}
		w.run(t, qids[i:i+1], false)
	}
	var eWall, eCPU, tWall, tCPU []time.Duration
	minCos := 1.0
	for i, q := range queries {
		var ev []float32
		engram := func() {
			c0, w0 := cpuTime(), time.Now()
			vs, err := e.Embed(ctx, []string{q})
			if err != nil {
				t.Fatal(err)
			}
			eWall, eCPU = append(eWall, time.Since(w0)), append(eCPU, cpuTime()-c0)
			ev = vs[0]
		}
		var tv []float32
		torch := func() {
			r := w.run(t, qids[i:i+1], true)
			tWall, tCPU = append(tWall, r.wall), append(tCPU, r.cpu)
			tv = r.vecs[0]
		}
		if i%2 == 0 { // alternate who goes first
			engram()
			torch()
		} else {
			torch()
			engram()
		}
		minCos = min(minCos, cosine(ev, tv))
	}

	// 300-character chunks, embedded in batches of the same size on both sides.
	var chunks []string
	for _, a := range abstracts {
		chunks = append(chunks, chunk300(a)...)
	}
	nC, rounds := envInt("ENGRAM_SIDEBYSIDE_CHUNKS", 32), envInt("ENGRAM_SIDEBYSIDE_ROUNDS", 2)
	var eChunk, tChunk, eChunkCPU, tChunkCPU time.Duration
	var chunkTokens int
	for r := range rounds {
		set := chunks[(r*nC)%max(1, len(chunks)-nC):][:nC]
		c0, w0 := cpuTime(), time.Now()
		if _, err := e.Embed(ctx, set); err != nil {
			t.Fatal(err)
		}
		eChunk += time.Since(w0)
		eChunkCPU += cpuTime() - c0
		ids := make([][]int32, len(set))
		for i, c := range set {
			ids[i], _, _ = tok.Encode(c)
			chunkTokens += len(ids[i])
		}
		// Sorted by length, as sentence-transformers does, then cut into batches.
		slices.SortFunc(ids, func(a, b []int32) int { return len(a) - len(b) })
		for lo := 0; lo < len(ids); lo += batch {
			res := w.run(t, ids[lo:min(lo+batch, len(ids))], false)
			tChunk += res.wall
			tChunkCPU += res.cpu
		}
	}
	n := float64(nC * rounds)

	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) }
	pct := func(ds []time.Duration, p int) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, len(s)*p/100)]
	}
	sum := func(ds []time.Duration) (s time.Duration) {
		for _, d := range ds {
			s += d
		}
		return s
	}
	ratio := func(a, b time.Duration) string { return strconv.FormatFloat(float64(a)/float64(b), 'f', 2, 64) }
	var load [3]float64
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Sscan(string(b), &load[0], &load[1], &load[2])
	}
	t.Logf("model %s, %d threads both sides, %d queries (8-32 tokens), %d chunks x %d rounds (%.0f tokens avg), batch %d, load average %.1f %.1f %.1f",
		opts.ModelPath, threads, len(queries), nC, rounds, float64(chunkTokens)/n, batch, load[0], load[1], load[2])
	t.Logf("| | engram (ORT) | PyTorch fp32 | engram / PyTorch |")
	t.Logf("|---|---|---|---|")
	t.Logf("| query p50 ms | %s | %s | %s |", ms(pct(eWall, 50)), ms(pct(tWall, 50)), ratio(pct(eWall, 50), pct(tWall, 50)))
	t.Logf("| query p99 ms | %s | %s | %s |", ms(pct(eWall, 99)), ms(pct(tWall, 99)), ratio(pct(eWall, 99), pct(tWall, 99)))
	t.Logf("| query CPU ms (mean) | %s | %s | %s |", ms(sum(eCPU)/time.Duration(len(eCPU))), ms(sum(tCPU)/time.Duration(len(tCPU))), ratio(sum(eCPU), sum(tCPU)))
	t.Logf("| chunks/s (300 chars) | %.2f | %.2f | %s (time) |", n/eChunk.Seconds(), n/tChunk.Seconds(), ratio(eChunk, tChunk))
	t.Logf("| chunk CPU ms (mean) | %s | %s | %s |", ms(eChunkCPU/time.Duration(n)), ms(tChunkCPU/time.Duration(n)), ratio(eChunkCPU, tChunkCPU))
	t.Logf("| min cosine to PyTorch fp32 | %.5f | | |", minCos)
	if minCos < 0.99 {
		t.Fatalf("min cosine of engram's vectors to PyTorch fp32 %.5f < 0.99", minCos)
	}
}

// chunk300 cuts text into pieces of at most 300 characters at spaces (the memory layer's
// default chunk size), keeping only full-size ones (>= 200 characters).
func chunk300(text string) []string {
	var out []string
	var cur []string
	size := 0
	for _, w := range strings.Fields(text) {
		if size+len(w)+1 > 300 && size > 0 {
			out = append(out, strings.Join(cur, " "))
			cur, size = nil, 0
		}
		cur = append(cur, w)
		size += len(w) + 1
	}
	if size >= 200 {
		out = append(out, strings.Join(cur, " "))
	}
	return out
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type torchWorker struct {
	in  io.Writer
	out *bufio.Scanner
}

type torchResult struct {
	wall, cpu time.Duration
	vecs      [][]float32
}

func startTorch(t *testing.T, py, preset string, threads int) *torchWorker {
	t.Helper()
	script := filepath.Join(repoRoot(t), "scripts", "onnx", "torch_worker.py")
	cmd := exec.Command(py, script, "--preset", cmp.Or(preset, "bge-m3"), "--threads", strconv.Itoa(threads))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start %s: %v", py, err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	w := &torchWorker{in: in, out: bufio.NewScanner(out)}
	w.out.Buffer(nil, 64<<20)
	start := time.Now()
	if !w.out.Scan() {
		t.Fatalf("torch worker exited before it was ready: %v", w.out.Err())
	}
	t.Logf("torch worker: %s (model built in %v)", w.out.Text(), time.Since(start).Round(time.Second))
	return w
}

func (w *torchWorker) run(t *testing.T, ids [][]int32, vecs bool) torchResult {
	t.Helper()
	req, _ := json.Marshal(map[string]any{"ids": ids, "vecs": vecs})
	if _, err := w.in.Write(append(req, '\n')); err != nil {
		t.Fatal(err)
	}
	if !w.out.Scan() {
		t.Fatalf("torch worker: no answer: %v", w.out.Err())
	}
	var r struct {
		WallNS int64 `json:"wall_ns"`
		CPUNS  int64 `json:"cpu_ns"`
		Vecs   [][]float32
	}
	if err := json.Unmarshal(w.out.Bytes(), &r); err != nil {
		t.Fatalf("torch worker answer: %v", err)
	}
	return torchResult{time.Duration(r.WallNS), time.Duration(r.CPUNS), r.Vecs}
}
