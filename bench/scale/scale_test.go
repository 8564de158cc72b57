package scale

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	flagN        = flag.Int("scale.n", 5000, "BenchmarkScale: memories")
	flagDim      = flag.Int("scale.dim", 256, "BenchmarkScale: dimension")
	flagSessions = flag.Int("scale.sessions", 500, "BenchmarkScale: sessions")
)

// BenchmarkScale runs the whole scale benchmark once per iteration (use
// -benchtime 1x) and reports its figures as metrics. Small by default;
// -scale.n, -scale.dim and -scale.sessions grow it.
func BenchmarkScale(b *testing.B) {
	cfg := Config{N: *flagN, Dim: *flagDim, Sessions: *flagSessions, Clusters: max(10, *flagN/100), Queries: 200, BandQueries: 30}
	b.Run(fmt.Sprintf("n=%d/dim=%d", cfg.N, cfg.Dim), func(b *testing.B) {
		var rep *Report
		for i := 0; i < b.N; i++ {
			cfg.Dir = filepath.Join(b.TempDir(), "store")
			var err error
			if rep, err = Run(context.Background(), cfg, nil); err != nil {
				b.Fatal(err)
			}
		}
		n := float64(cfg.N)
		b.ReportMetric(n/rep.IngestWall.Seconds(), "ingest/s")
		b.ReportMetric(n/rep.IngestCPU.Seconds(), "ingest/cpu-s")
		b.ReportMetric(rep.CompactWall.Seconds(), "compact-s")
		b.ReportMetric(float64(rep.OpenWall)/1e6, "open-ms")
		b.ReportMetric(float64(rep.DiskBytes)/n, "disk-B/memory")
		b.ReportMetric(float64(rep.MemQueries.RSS)/float64(CodesGraphBytes(cfg.N, cfg.Dim)), "rss/codes+graph")
		b.ReportMetric(float64(rep.Recall.P50)/1e6, "recall-p50-ms")
		b.ReportMetric(float64(rep.Recall.P99)/1e6, "recall-p99-ms")
		b.ReportMetric(rep.AllRecall, "recall@10")
		for _, bd := range rep.Bands {
			name := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", 100*bd.Share), "0"), ".")
			b.ReportMetric(bd.Recall, "band"+name+"%-recall@10")
			b.ReportMetric(float64(bd.P99)/1e6, "band"+name+"%-p99-ms")
		}
	})
}

// TestConfigRefusesBadInput: bad sizes are errors, not panics, and
// nothing is created.
func TestConfigRefusesBadInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	for _, c := range []Config{
		{N: 10, Dir: dir}, {N: 5000, Dim: 3, Dir: dir}, {N: 5000, Sessions: 3, Dir: dir},
		{N: 5000, Sessions: 4000, Dir: dir}, {N: 5000, Clusters: 1, Dir: dir}, {N: 5000, Queries: -1, Dir: dir},
		{N: 5000},
	} {
		if _, err := Run(context.Background(), c, nil); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestSmallRun runs a tiny store end to end and checks the figures are
// sane: every band found, filtered recall high, the exact scan agreeing
// with itself.
func TestSmallRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a store")
	}
	cfg := Config{N: 2000, Dim: 32, Sessions: 100, Clusters: 20, Queries: 20, BandQueries: 10, Dir: filepath.Join(t.TempDir(), "store")}
	rep, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Bands) != len(Heavy) {
		t.Fatalf("%d bands, want %d", len(rep.Bands), len(Heavy))
	}
	for _, b := range rep.Bands {
		if b.Recall < 0.95 {
			t.Errorf("band %s (%d): recall@10 %.3f", b.Session, b.Count, b.Recall)
		}
	}
	if rep.DiskBytes <= 0 || rep.IngestWall <= 0 || rep.Recall.P50 <= 0 || rep.Warm.P50 <= 0 || rep.WarmWall <= 0 || rep.OpenWall <= 0 || rep.OpenWall > time.Minute {
		t.Errorf("implausible report %+v", rep)
	}
	md := rep.Markdown(ThisMachine())
	for _, want := range []string{"ingest rate per CPU second", "VmRSS", "recall@10", heavy0(), "sessions holding 1% to 10%"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if rep.Recall.Heavy == 0 || rep.Recall.Heavy == cfg.Queries || rep.Recall.HeavyP50 <= 0 || rep.Recall.SmallP50 <= 0 || rep.Recall.CPU <= 0 || rep.Warm.Heavy != rep.Recall.Heavy {
		t.Errorf("recalls not split by session size: %+v", rep)
	}

	// Measure: the same store again, without ingesting; the same queries
	// find the same bands.
	again, err := Measure(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !again.MeasureOnly || again.IngestWall != 0 || again.Recall.P50 <= 0 || len(again.Bands) != len(rep.Bands) || again.DiskBytes != rep.DiskBytes {
		t.Errorf("Measure: %+v", again)
	}
	for i, b := range again.Bands {
		if b.Recall != rep.Bands[i].Recall || b.Count != rep.Bands[i].Count {
			t.Errorf("Measure band %s: recall %.3f of %d, Run %.3f of %d", b.Session, b.Recall, b.Count, rep.Bands[i].Recall, rep.Bands[i].Count)
		}
	}
	md = again.Markdown(ThisMachine())
	if strings.Contains(md, "ingest rate") || !strings.Contains(md, "-measure-only") {
		t.Errorf("Measure's report:\n%s", md)
	}
	if _, err := Measure(context.Background(), Config{N: 2000, Dim: 32, Sessions: 100, Dir: t.TempDir()}, nil); err == nil {
		t.Error("Measure of an empty directory: no error")
	}
}

// heavy0 is the first heavy share as the report prints it.
func heavy0() string { return fmt.Sprintf("%.3g%%", 100*Heavy[0]) }
