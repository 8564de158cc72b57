//go:build unix

package onnx

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
)

// TestIngestThroughput measures memories/s for 300-character chunks through the memory layer
// (memory.Open: the engine backend, durable writes) with this package's embedder, in the ways
// memories arrive: one Remember per memory (memctl remember TEXT, the HTTP and MCP remember
// calls), and many at once (Store.Import, which memctl import calls with 256 memories at a
// time and which embeds them in batches of Options.EmbedBatch; a long text given to one
// Remember is chunked and embedded the same way):
//
//	ENGRAM_INGEST_BENCH=1 ENGRAM_BENCH_MODEL=/tmp/bge-m3-random/model.onnx \
//	  ENGRAM_INT8_MODEL=/tmp/bge-m3-random-int8/model.onnx \
//	  go test -run TestIngestThroughput -v -timeout 60m ./onnx/
//
// With $ENGRAM_INT8_MODEL (comma-separated: several rewrites by quantize_int8.py, named by
// their directories) the same two ways run on each of those models too. Every way has its own
// store; they take turns, $ENGRAM_INGEST_BATCH (default 16) memories each, for
// $ENGRAM_INGEST_ROUNDS (default 2) rounds, so that load on a shared machine hits all alike.
// The embedder is opened as memctl opens it (Open's defaults: MaxBatch 32, ORT's threads).
// Each way's memories must all be stored. Besides memories/s the table profiles the path: the
// embedder's share (its Stats: tokenizer, input tensors, ORT run, pooling) against everything
// else the memory layer does per memory (dedup search, keyword index, durable write), and
// padded tokens per real token (what a batch pads to its longest text). Import also runs with
// the padding bound lifted (Options.MaxPadding's default against none), on the same embedder.
func TestIngestThroughput(t *testing.T) {
	fp32 := os.Getenv("ENGRAM_BENCH_MODEL")
	if os.Getenv("ENGRAM_INGEST_BENCH") == "" || fp32 == "" {
		t.Skip("set ENGRAM_INGEST_BENCH=1 and ENGRAM_BENCH_MODEL (and ENGRAM_INT8_MODEL)")
	}
	tok := xlmrTokenizer(t)
	open := func(model string) *Embedder {
		e, err := Open(Options{ModelPath: model, TokenizerPath: tok, IntraOpThreads: envInt("ENGRAM_BENCH_THREADS", 0)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	models := []struct {
		name string
		e    *Embedder
	}{{"fp32", open(fp32)}}
	for _, p := range strings.Split(os.Getenv("ENGRAM_INT8_MODEL"), ",") {
		if p != "" {
			models = append(models, struct {
				name string
				e    *Embedder
			}{filepath.Base(filepath.Dir(p)), open(p)})
		}
	}

	batch, rounds := envInt("ENGRAM_INGEST_BATCH", 16), envInt("ENGRAM_INGEST_ROUNDS", 2)
	var chunks []string
	for _, a := range scifactTexts(t, 400) {
		chunks = append(chunks, chunk300(a)...)
		if len(chunks) >= batch*rounds {
			break
		}
	}
	if len(chunks) < batch*rounds {
		t.Fatalf("%d chunks, want %d", len(chunks), batch*rounds)
	}
	ctx := context.Background()
	type way struct {
		name      string
		s         *memory.Store
		e         *Embedder
		many      bool
		maxPad    float64 // the embedder's padding bound during this way's turns
		wall, cpu time.Duration
		st        Stats // the embedder's work for this way
	}
	var ways []*way
	for _, m := range models {
		def := m.e.maxPad // Open's default (Options.MaxPadding)
		for _, k := range []struct {
			many bool
			pad  float64
		}{{false, def}, {true, def}, {true, 0}} {
			many := k.many
			name := m.name + ", one Remember per memory"
			if many {
				name = m.name + ", Import of " + fmt.Sprint(batch) + " (memctl import)"
				if k.pad == 0 {
					name += ", padding unbounded"
				}
			}
			s, err := memory.Open(filepath.Join(t.TempDir(), "store"), memory.OpenOptions{
				Options: memory.Options{Embedder: m.e, DedupThreshold: -1}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			ways = append(ways, &way{name: name, s: s, e: m.e, many: many, maxPad: k.pad})
		}
	}
	for _, w := range ways { // warm-up: the first runs size ORT's buffers
		if _, err := w.e.Embed(ctx, chunks[:2]); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	for r := range rounds {
		set := chunks[r*batch : (r+1)*batch]
		for k := range ways {
			w := ways[(r+k)%len(ways)]
			w.e.maxPad = w.maxPad
			st0 := w.e.Stats()
			c0, w0 := cpuTime(), time.Now()
			if w.many {
				ms := make([]memory.Memory, len(set))
				for i, c := range set {
					ms[i] = memory.Memory{ID: fmt.Sprintf("m%d-%d", r, i), Session: "bench", Text: c,
						Importance: 0.5, Created: now, Updated: now}
				}
				if err := w.s.Import(ctx, ms); err != nil {
					t.Fatal(err)
				}
			} else {
				for _, c := range set {
					res, err := w.s.Remember(ctx, "bench", c, memory.RememberOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if len(res.IDs) != 1 {
						t.Fatalf("a 300-character chunk became %d memories", len(res.IDs))
					}
				}
			}
			w.wall += time.Since(w0)
			w.cpu += cpuTime() - c0
			st1 := w.e.Stats()
			w.st.Tokens += st1.Tokens - st0.Tokens
			w.st.PaddedTokens += st1.PaddedTokens - st0.PaddedTokens
			w.st.Batches += st1.Batches - st0.Batches
			w.st.Tokenize += st1.Tokenize - st0.Tokenize
			w.st.Prepare += st1.Prepare - st0.Prepare
			w.st.Run += st1.Run - st0.Run
			w.st.Pool += st1.Pool - st0.Pool
		}
	}
	n := batch * rounds
	t.Logf("%d memories of 300-character chunks (SciFact) per way, %d rounds of %d, load average %s", n, rounds, batch, loadAvg())
	t.Logf("| way | memories/s | CPU ms per memory | tokens per memory | padded / real tokens | ORT runs | ORT run ms per memory | tokenize+tensors+pool ms | rest of the memory layer ms | speed vs fp32 one per Remember |")
	t.Logf("|---|---|---|---|---|---|---|---|---|---|")
	for _, w := range ways {
		st, err := w.s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Memories != n {
			t.Errorf("%s: %d memories stored, want %d", w.name, st.Memories, n)
		}
		per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
		goSide := w.st.Tokenize + w.st.Prepare + w.st.Pool
		t.Logf("| %s | %.3f | %.0f | %.0f | %.3f | %d | %.0f | %.2f | %.1f | %.2fx |", w.name, float64(n)/w.wall.Seconds(),
			per(w.cpu), float64(w.st.Tokens)/float64(n), float64(w.st.PaddedTokens)/float64(w.st.Tokens), w.st.Batches,
			per(w.st.Run), per(goSide), per(w.wall-w.st.Run-goSide), ways[0].wall.Seconds()/w.wall.Seconds())
	}
}
