package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engramdb/engram/bench/dataset"
	"github.com/engramdb/engram/quant"
)

// TestEncryptionCost (opt-in: ENGRAM_ENC_BENCH=N, ENGRAM_ENC_BENCH_DIM,
// default 1024) builds the same N clustered records into a plaintext and
// an encrypted store and compares open (to the first answer), resident
// memory and 10-NN search latency; it prints a markdown table for
// bench/results/encryption.md. Timing figures: run it with nothing beside.
func TestEncryptionCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ENGRAM_ENC_BENCH"))
	if n <= 0 {
		t.Skip("opt-in: ENGRAM_ENC_BENCH=100000")
	}
	dim := 1024
	if s := os.Getenv("ENGRAM_ENC_BENCH_DIM"); s != "" {
		dim, _ = strconv.Atoi(s)
	}
	set, err := dataset.Synthetic(dataset.SyntheticConfig{N: n, Queries: 500, Dim: dim, K: 10})
	if err != nil {
		t.Fatal(err)
	}
	key := testKey("encryption cost")
	base := t.TempDir()
	type result struct {
		name                 string
		build, open          time.Duration
		disk                 int64
		rssOpen, rssSearched int64
		p50, p99, cpu        time.Duration
		recall               float64
	}
	var rs []result
	for _, enc := range []bool{false, true} {
		r := result{name: "plaintext"}
		o := Options{UnsafeNoSync: true, FlushBytes: -1, CompactInterval: -1}
		if enc {
			r.name, o.Key = "encrypted", key
		}
		dir := filepath.Join(base, r.name)
		t0 := time.Now()
		db, err := Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		c, err := db.CreateCollection(CollectionConfig{Name: "bench", Dim: dim, Metric: quant.Cosine})
		if err != nil {
			t.Fatal(err)
		}
		for lo := 0; lo < n; lo += 500 {
			batch := make([]Record, 0, 500)
			for i := lo; i < min(n, lo+500); i++ {
				batch = append(batch, benchRecord(set.Base.Row(i), i))
			}
			if err := c.Upsert(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Compact(); err != nil {
			t.Fatal(err)
		}
		r.build = time.Since(t0)
		r.disk = db.Stats().Collections[0].DiskBytes
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		// Opens to the first answer (the files are in the page cache).
		var opens []time.Duration
		for i := range 3 {
			runtime.GC()
			debug.FreeOSMemory()
			rss0 := vmRSS()
			t0 := time.Now()
			db, err = Open(dir, Options{Key: o.Key, FlushBytes: -1, CompactInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			c, err = db.Collection("bench")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Search(ctx, SearchRequest{Vector: set.Queries.Row(0), K: 10}); err != nil {
				t.Fatal(err)
			}
			opens = append(opens, time.Since(t0))
			r.rssOpen = vmRSS() - rss0
			if i < 2 {
				db.Close()
				continue
			}
			var lat []time.Duration
			found := 0
			cpu0 := cpuSelf()
			for round := range 4 {
				for qi := range set.Queries.Len() {
					t1 := time.Now()
					hits, err := c.Search(ctx, SearchRequest{Vector: set.Queries.Row(qi), K: 10})
					lat = append(lat, time.Since(t1))
					if err != nil {
						t.Fatal(err)
					}
					if round == 0 {
						for _, h := range hits {
							for _, g := range set.GroundTruth[qi][:10] {
								if h.ID == fmt.Sprintf("doc-%08d", g) {
									found++
								}
							}
						}
					}
				}
			}
			r.cpu = (cpuSelf() - cpu0) / time.Duration(len(lat))
			slices.Sort(lat)
			r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
			r.recall = float64(found) / float64(10*set.Queries.Len())
			r.rssSearched = vmRSS() - rss0
			db.Close()
		}
		slices.Sort(opens)
		r.open = opens[1]
		rs = append(rs, r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "N=%d dim=%d, GOMAXPROCS=%d\n\n", n, dim, runtime.GOMAXPROCS(0))
	b.WriteString("| store | build+compact s | disk MB | open to first answer ms (median of 3) | RSS after open MiB | RSS after 2,000 searches MiB | search p50 µs | p99 µs | CPU µs/search | recall@10 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %d | %d | %.3f |\n", r.name, r.build.Seconds(), float64(r.disk)/1e6,
			float64(r.open.Microseconds())/1000, float64(r.rssOpen)/(1<<20), float64(r.rssSearched)/(1<<20),
			r.p50.Microseconds(), r.p99.Microseconds(), r.cpu.Microseconds(), r.recall)
	}
	p, e := rs[0], rs[1]
	fmt.Fprintf(&b, "\nencrypted / plaintext: open %.2fx, RSS after searches %.2fx, p50 %.2fx, p99 %.2fx, CPU per search %.2fx\n",
		float64(e.open)/float64(p.open), float64(e.rssSearched)/float64(p.rssSearched),
		float64(e.p50)/float64(p.p50), float64(e.p99)/float64(p.p99), float64(e.cpu)/float64(p.cpu))
	t.Log("\n" + b.String())
}

// vmRSS is the process's resident set in bytes (0 off Linux).
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func cpuSelf() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
