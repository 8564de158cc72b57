package weaviate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/internal/weaviatetest"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

var benchWords = strings.Fields(`tea coffee berlin shanghai meeting report daughter school dentist friday talk vector
	database billing service quarter allergy peanuts cat dog garden piano guitar marathon budget invoice holiday flight
	hotel contract lawyer doctor recipe bread wine cheese train bike museum concert ticket passport visa salary bonus
	咖啡 出差 酒店 会议 报告 女儿 学校 周五 预算 航班 假期 花园 钢琴 马拉松 合同 医生 面包 火车 博物馆 护照`)

// benchMemories makes n distinct memories over 20 sessions, already embedded.
func benchMemories(b *testing.B, emb memory.Embedder, n int) []memory.Memory {
	rng := rand.New(rand.NewPCG(7, 7))
	texts := make([]string, n)
	for i := range texts {
		var s strings.Builder
		fmt.Fprintf(&s, "m%d", i)
		for j := 0; j < 12; j++ {
			s.WriteString(" " + benchWords[rng.IntN(len(benchWords))])
		}
		texts[i] = s.String()
	}
	vecs, err := emb.Embed(context.Background(), texts)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	ms := make([]memory.Memory, n)
	for i := range ms {
		ms[i] = memory.Memory{ID: fmt.Sprintf("%032x", i+1), Session: fmt.Sprintf("s%d", i%20), Text: texts[i], Importance: 0.5,
			Created: t0.Add(time.Duration(i) * time.Second), Updated: t0.Add(time.Duration(i) * time.Second), Vector: vecs[i]}
	}
	return ms
}

// BenchmarkBackends loads the same memories into the embedded engine, one
// Weaviate node and a three-node Weaviate cluster (replication 2), then
// measures bulk write throughput and hybrid recall latency (session filter,
// decay on, single client, query embedding excluded) on each, side by side.
// ENGRAM_BENCH_MEMORIES sets the size (default 10000).
func BenchmarkBackends(b *testing.B) {
	n := 10000
	if v := os.Getenv("ENGRAM_BENCH_MEMORIES"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	emb, err := lexical.New(lexical.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ms := benchMemories(b, emb, n)
	ctx := context.Background()
	type backendCase struct {
		name string
		open func(b *testing.B) memory.Backend
	}
	cases := []backendCase{
		{"engine", func(b *testing.B) memory.Backend {
			db, err := engine.Open(filepath.Join(b.TempDir(), "store"), engine.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return memory.NewEngineBackend(db)
		}},
		{"weaviate-1node", func(b *testing.B) memory.Backend {
			return openBackend(b, weaviatetest.Start(b, 1).Nodes[0].URL, Options{})
		}},
		{"weaviate-3nodes-rf2", func(b *testing.B) memory.Backend {
			return openBackend(b, weaviatetest.Start(b, 3).Nodes[0].URL, Options{Replication: 2})
		}},
	}
	for _, bc := range cases {
		// Go runs a benchmark function once with b.N = 1 before the measured
		// run: load each backend once and keep it for both.
		var (
			s         *memory.Store
			writeRate float64
		)
		outer := b
		b.Run("backend="+bc.name, func(b *testing.B) {
			if s == nil {
				// Servers and stores belong to the outer benchmark, whose
				// cleanups run once, at its end.
				back := bc.open(outer)
				outer.Cleanup(func() { back.Close() })
				var err error
				if s, err = memory.New(ctx, back, memory.Options{Embedder: emb}); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				for i := 0; i < len(ms); i += 256 {
					if err := s.Import(ctx, ms[i:min(i+256, len(ms))]); err != nil {
						b.Fatal(err)
					}
				}
				writeRate = float64(len(ms)) / time.Since(start).Seconds()
				// Measure the engine as it settles: flushed and compacted (the
				// background compactor would get there; Weaviate indexes on insert).
				if err := s.Flush(ctx); err == nil {
					if err := s.Compact(ctx); err != nil {
						b.Fatal(err)
					}
				} else if !errors.Is(err, memory.ErrUnsupported) {
					b.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(1, 1))
			queries := make([]int, 200)
			for i := range queries {
				queries[i] = rng.IntN(len(ms))
			}
			qvecs := make([][]float32, len(queries))
			qtext := make([]string, len(queries))
			for i, qi := range queries {
				words := strings.Fields(ms[qi].Text)
				qtext[i] = strings.Join(words[1:6], " ")
				v, err := emb.Embed(ctx, []string{qtext[i]})
				if err != nil {
					b.Fatal(err)
				}
				qvecs[i] = v[0]
			}
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j := i % len(queries)
				t := time.Now()
				_, err := s.RecallWithVector(ctx, qtext[j], qvecs[j], memory.RecallOptions{Session: ms[queries[j]].Session, NoTouch: true})
				lat = append(lat, time.Since(t))
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_us")
			b.ReportMetric(writeRate, "writes/s")
			b.ReportMetric(float64(len(ms)), "memories")
		})
	}
}
