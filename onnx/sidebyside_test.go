//go:build unix

package onnx

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
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
// $ENGRAM_BENCH_MODEL (the export of scripts/onnx/export_tiny.py --preset bge-m3) here, and
// scripts/onnx/torch_worker.py rebuilding the same preset from the same seed in fp32 there
// (Debian's python3-torch). With $ENGRAM_SIDEBYSIDE_INT8 (the int8 rewrite of the same model by
// quantize_int8.py) a third contender joins the rotation. It reports query latency (p50/p99,
// wall and CPU time) for 8-32-token queries, throughput for 300-character chunks, the ratios,
// and the cosine of each ORT model's vectors to PyTorch's fp32 ones, which must stay >= 0.99
// (about 1.0 for the fp32 export: the same weights).
//
//	ENGRAM_SIDEBYSIDE=1 ENGRAM_BENCH_MODEL=/tmp/bge-m3-random/model.onnx \
//	  ENGRAM_SIDEBYSIDE_INT8=/tmp/bge-m3-random-int8/model.onnx \
//	  go test -run TestSideBySideTorch -v -timeout 60m ./onnx/
//
// $ENGRAM_SIDEBYSIDE is the python3 to run (1: /usr/bin/python3); $ENGRAM_BENCH_THREADS
// the threads on both sides (default: all CPUs); $ENGRAM_SIDEBYSIDE_QUERIES (40),
// _CHUNKS (32, per round), _ROUNDS (2) and _BATCH (16, both sides) size the run. The test
// fails when PyTorch runs on the reference BLAS (see torch_worker.py) unless
// $ENGRAM_SIDEBYSIDE_REFBLAS=1. scripts/onnx/side_by_side.sh makes the models and runs it.
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
	contenders := []*contender{{name: "engram fp32", e: openTiny(t, "", opts), minCos: 1}}
	if p := os.Getenv("ENGRAM_SIDEBYSIDE_INT8"); p != "" {
		o := opts
		o.ModelPath = p
		contenders = append(contenders, &contender{name: "engram int8", e: openTiny(t, "", o), minCos: 1})
	}
	tok := contenders[0].e.tok

	w := startTorch(t, py, os.Getenv("ENGRAM_SIDEBYSIDE_PRESET"), threads)
	torchC := &contender{name: "PyTorch fp32"}
	all := append(slices.Clone(contenders), torchC)

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
	for i := range 2 { // warm-up, every contender
		for _, c := range contenders {
			if _, err := c.e.Embed(ctx, queries[i:i+1]); err != nil {
				t.Fatal(err)
			}
		}
		w.run(t, qids[i:i+1], false)
	}
	for i, q := range queries {
		var tv []float32
		vecs := make([][]float32, len(contenders))
		turns := make([]func(), 0, len(all))
		for k, c := range contenders {
			turns = append(turns, func() {
				c0, w0 := cpuTime(), time.Now()
				vs, err := c.e.Embed(ctx, []string{q})
				if err != nil {
					t.Fatal(err)
				}
				c.wall, c.cpu = append(c.wall, time.Since(w0)), append(c.cpu, cpuTime()-c0)
				vecs[k] = vs[0]
			})
		}
		turns = append(turns, func() {
			r := w.run(t, qids[i:i+1], true)
			torchC.wall, torchC.cpu = append(torchC.wall, r.wall), append(torchC.cpu, r.cpu)
			tv = r.vecs[0]
		})
		for k := range turns { // rotate who goes first
			turns[(i+k)%len(turns)]()
		}
		for k, c := range contenders {
			c.minCos = min(c.minCos, cosine(vecs[k], tv))
		}
	}

	// 300-character chunks, embedded in batches of the same size on every side.
	var chunks []string
	for _, a := range abstracts {
		chunks = append(chunks, chunk300(a)...)
	}
	nC, rounds := envInt("ENGRAM_SIDEBYSIDE_CHUNKS", 32), envInt("ENGRAM_SIDEBYSIDE_ROUNDS", 2)
	var chunkTokens int
	for r := range rounds {
		set := chunks[(r*nC)%max(1, len(chunks)-nC):][:nC]
		ids := make([][]int32, len(set))
		for i, c := range set {
			ids[i], _, _ = tok.Encode(c)
			chunkTokens += len(ids[i])
		}
		// Sorted by length, as sentence-transformers does, then cut into batches.
		slices.SortFunc(ids, func(a, b []int32) int { return len(a) - len(b) })
		turns := make([]func(), 0, len(all))
		for _, c := range contenders {
			turns = append(turns, func() {
				c0, w0 := cpuTime(), time.Now()
				if _, err := c.e.Embed(ctx, set); err != nil {
					t.Fatal(err)
				}
				c.chunkWall += time.Since(w0)
				c.chunkCPU += cpuTime() - c0
			})
		}
		turns = append(turns, func() {
			for lo := 0; lo < len(ids); lo += batch {
				res := w.run(t, ids[lo:min(lo+batch, len(ids))], false)
				torchC.chunkWall += res.wall
				torchC.chunkCPU += res.cpu
			}
		})
		for k := range turns {
			turns[(r+k)%len(turns)]()
		}
	}
	n := float64(nC * rounds)

	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) }
	ratio := func(a, b time.Duration) string { return strconv.FormatFloat(float64(a)/float64(b), 'f', 2, 64) }
	t.Logf("model %s, %d threads every side, %d queries (8-32 tokens), %d chunks x %d rounds (%.0f tokens avg), batch %d, load average %s",
		opts.ModelPath, threads, len(queries), nC, rounds, float64(chunkTokens)/n, batch, loadAvg())
	head, sep := "| |", "|---|"
	for _, c := range all {
		head += " " + c.name + " |"
		sep += "---|"
	}
	for _, c := range contenders {
		head += " " + c.name + " / PyTorch |"
		sep += "---|"
	}
	t.Log(head)
	t.Log(sep)
	row := func(label string, val func(*contender) time.Duration, show func(*contender) string) {
		line := "| " + label + " |"
		for _, c := range all {
			line += " " + show(c) + " |"
		}
		for _, c := range contenders {
			line += " " + ratio(val(c), val(torchC)) + " |"
		}
		t.Log(line)
	}
	p50 := func(c *contender) time.Duration { return pctl(c.wall, 50) }
	p99 := func(c *contender) time.Duration { return pctl(c.wall, 99) }
	qcpu := func(c *contender) time.Duration { return sumDur(c.cpu) / time.Duration(len(c.cpu)) }
	row("query p50 ms", p50, func(c *contender) string { return ms(p50(c)) })
	row("query p99 ms", p99, func(c *contender) string { return ms(p99(c)) })
	row("query CPU ms (mean)", qcpu, func(c *contender) string { return ms(qcpu(c)) })
	row("chunk wall (ratio: time)", func(c *contender) time.Duration { return c.chunkWall },
		func(c *contender) string {
			return strconv.FormatFloat(n/c.chunkWall.Seconds(), 'f', 2, 64) + " chunks/s"
		})
	row("chunk CPU ms (mean)", func(c *contender) time.Duration { return c.chunkCPU },
		func(c *contender) string { return ms(c.chunkCPU / time.Duration(n)) })
	for _, c := range contenders {
		t.Logf("%s: min cosine to PyTorch fp32 %.5f over %d queries", c.name, c.minCos, len(queries))
	}
	for _, c := range contenders {
		if c.minCos < 0.99 {
			t.Errorf("%s: min cosine to PyTorch fp32 %.5f < 0.99", c.name, c.minCos)
		}
	}
}

// contender is one side of TestSideBySideTorch with its timings.
type contender struct {
	name                string
	e                   *Embedder // nil for PyTorch
	wall, cpu           []time.Duration
	chunkWall, chunkCPU time.Duration
	minCos              float64
}

func pctl(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func sumDur(ds []time.Duration) (s time.Duration) {
	for _, d := range ds {
		s += d
	}
	return s
}

// loadAvg is /proc/loadavg's three load averages ("?" where it cannot be read).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
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
	var ready struct {
		Blas          string
		ReferenceBlas bool `json:"reference_blas"`
	}
	if err := json.Unmarshal(w.out.Bytes(), &ready); err != nil {
		t.Fatalf("torch worker ready line: %v", err)
	}
	if ready.ReferenceBlas && os.Getenv("ENGRAM_SIDEBYSIDE_REFBLAS") != "1" {
		t.Fatalf("PyTorch runs on the reference BLAS (%s), which is not PyTorch's speed: "+
			"apt-get install libopenblas0-openmp (or set ENGRAM_SIDEBYSIDE_REFBLAS=1 to time it anyway)", ready.Blas)
	}
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
