package keyword

import (
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// zipfCorpus builds n synthetic documents of 30 words drawn from a Zipf(1.1)
// vocabulary of 50k words, the shape of natural text, and queries of 4 words.
func zipfCorpus(n, queries int) (docs, qs []string) {
	r := rand.New(rand.NewSource(7))
	z := rand.NewZipf(r, 1.1, 1, 49999)
	gen := func(words int) string {
		var sb strings.Builder
		for range words {
			fmt.Fprintf(&sb, "w%d ", z.Uint64())
		}
		return sb.String()
	}
	for range n {
		docs = append(docs, gen(30))
	}
	for range queries {
		qs = append(qs, gen(4))
	}
	return docs, qs
}

var benchIndex = sync.OnceValues(func() (*Index, []string) {
	docs, qs := zipfCorpus(100_000, 500)
	idx := NewIndex()
	for i, d := range docs {
		_ = idx.Add(uint32(i), d)
	}
	return idx, qs
})

// BenchmarkSearch100k: single-thread BM25 top-10 over 100k documents, with
// no filter and with a filter passing 10% of documents (a session filter):
// go test ./keyword -run '^$' -bench Search100k -benchtime 2000x
func BenchmarkSearch100k(b *testing.B) {
	idx, qs := benchIndex()
	seg := mustSegment(b, idx)
	for _, c := range []struct {
		name  string
		part  Part
		allow func(int, uint32) bool
	}{
		{"part=mutable/filter=none", idx, nil},
		{"part=mutable/filter=10pct", idx, func(_ int, d uint32) bool { return d%10 == 3 }},
		{"part=segment/filter=none", seg, nil},
		{"part=segment/filter=10pct", seg, func(_ int, d uint32) bool { return d%10 == 3 }},
	} {
		b.Run(c.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var lat, cpu []time.Duration
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				start, startCPU := time.Now(), threadCPU()
				if _, err := Search([]Part{c.part}, qs[i%len(qs)], 10, c.allow); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				cpu = append(cpu, threadCPU()-startCPU)
				i++
			}
			pct := func(d []time.Duration, p int) float64 {
				slices.Sort(d)
				return float64(d[(len(d)-1)*p/100].Microseconds())
			}
			b.ReportMetric(pct(lat, 50), "p50_us")
			b.ReportMetric(pct(lat, 99), "p99_us")
			if cpu[len(cpu)-1] > 0 {
				b.ReportMetric(pct(cpu, 50), "p50_cpu_us")
				b.ReportMetric(pct(cpu, 99), "p99_cpu_us")
			}
		})
	}
}

func mustSegment(tb testing.TB, idx *Index) *Segment {
	tb.Helper()
	b, err := idx.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	s, err := Open(b)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
