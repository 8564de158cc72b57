package memory_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/bench/beir"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory/lexical"
	"golang.org/x/sys/unix"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/memorytest"
)

// synthText returns a pseudo-sentence of Zipf-distributed words from a fixed vocabulary, so
// that BM25 and the lexical embedder see realistic term statistics.
func synthText(z *rand.Zipf, vocab []string, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = vocab[z.Uint64()]
	}
	return strings.Join(ws, " ")
}

func synthVocab(rng *rand.Rand, n int) []string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	vocab := make([]string, n)
	for i := range vocab {
		b := make([]byte, 3+rng.IntN(7))
		for j := range b {
			b[j] = letters[rng.IntN(len(letters))]
		}
		vocab[i] = string(b)
	}
	return vocab
}

// benchTexts returns n memory texts and 200 queries. By default they are the documents and
// queries of every set in shared/datasets/text (English and Chinese), cycled to reach n, so
// BM25 sees real term statistics (stopwords, long and short posting lists);
// ENGRAM_BENCH_TEXT=synthetic (or no datasets) uses Zipf-distributed random words instead, a
// harsher case where the most frequent "words" are in nearly every memory.
func benchTexts(b *testing.B, rng *rand.Rand, n int) (texts, queries []string, corpus string) {
	if root, ok := beir.FindDatasets(); ok && os.Getenv("ENGRAM_BENCH_TEXT") != "synthetic" {
		for _, set := range []struct{ dir, prefix string }{{"scifact", ""}, {"cranfield", ""}, {"cisi", ""}, {"rgb", "en_"}, {"rgb", "zh_"}} {
			ds, err := beir.Load(filepath.Join(root, "text", set.dir), set.prefix)
			if err != nil {
				b.Fatal(err)
			}
			for _, d := range ds.Docs {
				if strings.TrimSpace(d.Content()) != "" {
					texts = append(texts, d.Content())
				}
			}
			for _, q := range ds.Queries {
				queries = append(queries, q.Text)
			}
		}
		rng.Shuffle(len(texts), func(i, j int) { texts[i], texts[j] = texts[j], texts[i] })
		rng.Shuffle(len(queries), func(i, j int) { queries[i], queries[j] = queries[j], queries[i] })
		for i := len(texts); len(texts) < n; i++ {
			texts = append(texts, texts[i%len(texts)])
		}
		return texts[:n], queries[:200], "real"
	}
	vocab := synthVocab(rng, 20000)
	z := rand.NewZipf(rng, 1.1, 1, uint64(len(vocab)-1))
	texts = make([]string, n)
	for i := range texts {
		texts[i] = synthText(z, vocab, 8+rng.IntN(40))
	}
	queries = make([]string, 200)
	for i := range queries {
		queries[i] = synthText(z, vocab, 3+rng.IntN(5))
	}
	return texts, queries, "synthetic"
}

// BenchmarkRecall measures Recall latency on an engine store of n memories in 100 sessions
// (n from ENGRAM_BENCH_N, default 100000; texts from benchTexts), single-threaded, hybrid with
// the default fusion, decay on, session filter on, query vectors precomputed
// (RecallWithVector: the embedder is not timed), with and without the access-statistics update
// (touch; the store runs without fsync, so touch costs its WAL write, not a disk flush). It
// reports p50 and p99 per call in microseconds. Building the store takes minutes at 100k.
func BenchmarkRecall(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("ENGRAM_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	const sessions = 100
	emb, err := lexical.New(lexical.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	texts, queries, corpus := benchTexts(b, rng, n)
	clk := memorytest.NewClock()
	// ENGRAM_BENCH_STORE keeps the built store between runs (it is rebuilt when its size differs).
	dir := os.Getenv("ENGRAM_BENCH_STORE")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "store")
	}
	s, err := memory.Open(dir, memory.OpenOptions{
		Options: memory.Options{Embedder: emb, Clock: clk.Now, DedupThreshold: -1, MaxTextBytes: engine.MaxTextLen},
		Engine:  engine.Options{UnsafeNoSync: true, CompactInterval: -1},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	const batch = 1000
	have, err := s.Count(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	if have != n {
		if _, err := s.ForgetWhere(ctx, memory.Exists(memory.FieldCreated)); err != nil {
			b.Fatal(err)
		}
		have = 0
	}
	for i := have; i < n; i += batch {
		ms := make([]memory.Memory, min(batch, n-i))
		for j := range ms {
			t := clk.Now().Add(-time.Duration(rng.IntN(365*24)) * time.Hour)
			ms[j] = memory.Memory{ID: fmt.Sprintf("m%07d", i+j), Session: fmt.Sprintf("s%02d", (i+j)%sessions),
				Text: texts[i+j], Importance: 0.5, Created: t, Updated: t}
		}
		if err := s.Import(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
	// Steady state: everything flushed and compacted (background compaction is off here so it
	// cannot run during the measurement).
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if err := s.Compact(ctx); err != nil {
		b.Fatal(err)
	}
	if st, err := s.Stats(ctx); err == nil {
		b.Logf("%d segments, %d MiB on disk", st.Backend.Segments, st.Backend.DiskBytes>>20)
	}
	b.Logf("built %d memories (%s texts) in %v", n, corpus, time.Since(start).Round(time.Second))
	qvecs, err := emb.Embed(ctx, queries)
	if err != nil {
		b.Fatal(err)
	}
	for _, touch := range []bool{false, true} {
		b.Run(fmt.Sprintf("n=%d/text=%s/touch=%v", n, corpus, touch), func(b *testing.B) {
			benchRecallLoop(b, s, queries, qvecs, sessions, !touch)
		})
	}
}

// benchRecallLoop times recalls: wall-clock latency, and the CPU time of the calling thread
// (CLOCK_THREAD_CPUTIME_ID, with the goroutine locked to it): on a machine shared with other
// work the second shows what one recall costs without the time spent waiting for a core.
func benchRecallLoop(b *testing.B, s *memory.Store, queries []string, qvecs [][]float32, sessions int, noTouch bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var wall, cpu []time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q := i % len(queries)
		c0, t0 := threadCPU(), time.Now()
		rs, err := s.RecallWithVector(ctx, queries[q], qvecs[q], memory.RecallOptions{Session: fmt.Sprintf("s%02d", q%sessions), NoTouch: noTouch})
		wall, cpu = append(wall, time.Since(t0)), append(cpu, threadCPU()-c0)
		if err != nil || len(rs) == 0 {
			b.Fatalf("recall: %v, %d results", err, len(rs))
		}
	}
	b.ReportMetric(percentileUS(wall, 0.50), "p50_us")
	b.ReportMetric(percentileUS(wall, 0.99), "p99_us")
	b.ReportMetric(percentileUS(cpu, 0.50), "cpu_p50_us")
	b.ReportMetric(percentileUS(cpu, 0.99), "cpu_p99_us")
}

func percentileUS(d []time.Duration, p float64) float64 {
	d = slices.Clone(d)
	slices.Sort(d)
	return float64(d[min(len(d)-1, int(p*float64(len(d))))].Nanoseconds()) / 1e3
}

// threadCPU returns the CPU time the calling OS thread has used (user + system).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
