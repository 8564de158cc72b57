package hnsw

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/engramdb/engram/quant"
)

// clustered returns n L2-normalized vectors around nc random centres and
// each vector's centre: the shape of memories, where one user's lie in a
// few topics.
func clustered(n, dim, nc int, seed uint64) ([][]float32, []int) {
	r := rand.New(rand.NewPCG(seed, 11))
	centres := make([][]float64, nc)
	for i := range centres {
		centres[i] = make([]float64, dim)
		for j := range centres[i] {
			centres[i][j] = r.NormFloat64()
		}
	}
	rows := make([][]float32, n)
	labels := make([]int, n)
	for i := range rows {
		c := r.IntN(nc)
		labels[i] = c
		v := make([]float32, dim)
		var norm float64
		for j := range v {
			x := centres[c][j] + 0.6*r.NormFloat64()
			v[j] = float32(x)
			norm += x * x
		}
		for j := range v {
			v[j] = float32(float64(v[j]) / math.Sqrt(norm))
		}
		rows[i] = v
	}
	return rows, labels
}

// sessionFilter allows count ids: 70% from two home clusters, the rest
// anywhere, like one user's memories. It returns the set and one home
// cluster.
func sessionFilter(r *rand.Rand, labels []int, count, nc int) (*Bitset, int) {
	bs := NewBitset(len(labels))
	home := [2]int{r.IntN(nc), r.IntN(nc)}
	var members []uint32
	for id, l := range labels {
		if l == home[0] || l == home[1] {
			members = append(members, uint32(id))
		}
	}
	for bs.Count() < count*7/10 && bs.Count() < len(members) {
		_ = bs.Set(members[r.IntN(len(members))])
	}
	for bs.Count() < count {
		_ = bs.Set(uint32(r.IntN(len(labels))))
	}
	return bs, home[0]
}

// TestPlannerBands checks, per selectivity band, which Strategy the
// planner picks and that the answer holds recall@10 >= 0.95 against brute
// force over the allowed ids. The graph is small, so the test planner's
// thresholds are shrunk to put the bands where a store of a million puts
// them (scan, two-hop, walk); the default planner's choices at scale are
// checked on their own.
func TestPlannerBands(t *testing.T) {
	const n, dim, nc, k, ef = 5000, 32, 40, 10, 64
	rows, labels := clustered(n, dim, nc, 1)
	ix := build(t, Config{Dim: dim, Metric: quant.Cosine, Seed: 1, EfConstruction: 100}, rows)
	small := &planner{scanFactor: ScanFactor, scanMax: 0.5, twoHopMax: TwoHopMax}
	r := rand.New(rand.NewPCG(5, 5))
	bands := []struct {
		sel  float64
		want Strategy
	}{
		{0.0001, StrategyScan}, {0.001, StrategyScan}, {0.01, StrategyTwoHop},
		{0.05, StrategyTwoHop}, {0.1, StrategyTwoHop}, {0.5, StrategyWalk},
	}
	for _, b := range bands {
		count := max(1, int(math.Round(b.sel*n)))
		bs, home := sessionFilter(r, labels, count, nc)
		p, err := makePlan(&ix.g, rows[0], k, SearchOptions{Ef: ef, Filter: bs, planner: small}, ix.Live(), false)
		if err != nil {
			t.Fatal(err)
		}
		if p.strat != b.want {
			t.Errorf("selectivity %g (%d ids): planner chose %v, want %v", b.sel, count, p.strat, b.want)
		}
		allow := func(i int) bool { return bs.Allow(uint32(i)) }
		// Half the queries near the session's home topic, half anywhere.
		var queries [][]float32
		for len(queries) < 60 {
			id := r.IntN(n)
			if len(queries)%2 == 0 && labels[id] != home {
				continue
			}
			q := make([]float32, dim)
			for j := range q {
				q[j] = rows[id][j] + float32(0.05*r.NormFloat64())
			}
			queries = append(queries, q)
		}
		recall := func(opts SearchOptions) float64 {
			var sum float64
			for _, q := range queries {
				res, err := ix.Search(q, k, opts)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range res {
					if !bs.Allow(h.ID) {
						t.Fatalf("selectivity %g: id %d not allowed", b.sel, h.ID)
					}
				}
				want := bruteForce(quant.Cosine, rows, q, k, allow)
				if len(res) != len(want) {
					t.Fatalf("selectivity %g: %d results, want %d", b.sel, len(res), len(want))
				}
				sum += recallAt(res, want)
			}
			return sum / float64(len(queries))
		}
		got := recall(SearchOptions{Ef: ef, Filter: bs, planner: small})
		t.Logf("selectivity %g (%d ids) %v: recall@10 %.3f", b.sel, count, b.want, got)
		if got < 0.95 {
			t.Errorf("selectivity %g (%d ids) %v: recall@10 %.3f < 0.95", b.sel, count, b.want, got)
		}
		// The two-hop walk on its own must hold every band it may be
		// given; the plain walk is logged for comparison.
		if count >= 5 {
			th := recall(SearchOptions{Ef: ef, Filter: bs, Strategy: StrategyTwoHop})
			walk := recall(SearchOptions{Ef: ef, Filter: bs, Strategy: StrategyWalk})
			t.Logf("  forced: twohop %.3f walk %.3f", th, walk)
			if th < 0.95 {
				t.Errorf("selectivity %g: forced two-hop recall@10 %.3f < 0.95", b.sel, th)
			}
		}
	}
}

// TestPlannerDefaults pins the default planner's choices where they
// matter: a store of a million with the default ef, and a small one.
func TestPlannerDefaults(t *testing.T) {
	pl := &defaultPlanner
	for _, c := range []struct {
		count, live, ef int
		want            Strategy
	}{
		{100, 1_000_000, 64, StrategyScan},
		{1_000, 1_000_000, 64, StrategyScan},
		{4_000, 1_000_000, 64, StrategyScan},
		{10_000, 1_000_000, 64, StrategyScan},   // sparse: SparseScanMax
		{20_000, 1_000_000, 64, StrategyScan},   // 2%, under its cap
		{25_000, 1_000_000, 64, StrategyTwoHop}, // past 2%
		{30_000, 3_000_000, 64, StrategyTwoHop}, // 1%, past the cap
		{100_000, 1_000_000, 64, StrategyTwoHop},
		{500_000, 1_000_000, 64, StrategyWalk},
		{2_500, 5_000, 64, StrategyScan},
		{8_000, 100_000, 64, StrategyTwoHop},
		{20_000, 100_000, 64, StrategyWalk},
		{0, 0, 64, StrategyScan},
	} {
		if got := pl.choose(c.count, c.live, c.ef); got != c.want {
			t.Errorf("choose(%d of %d, ef %d) = %v, want %v", c.count, c.live, c.ef, got, c.want)
		}
	}
}

// TestTwoHopDisconnected: a filter whose ids lie far from the query and
// from each other is still answered (the seeds start walks inside it),
// and deleted ids are never returned.
func TestTwoHopDisconnected(t *testing.T) {
	const n, dim, nc = 3000, 16, 30
	rows, labels := clustered(n, dim, nc, 2)
	ix := build(t, Config{Dim: dim, Metric: quant.L2, Seed: 2, EfConstruction: 64}, rows)
	bs := NewBitset(n)
	for id, l := range labels {
		if l == 3 {
			_ = bs.Set(uint32(id))
		}
	}
	var deleted uint32
	for id, l := range labels {
		if l == 3 {
			deleted = uint32(id)
			if err := ix.Delete(deleted); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	allow := func(i int) bool { return bs.Allow(uint32(i)) && uint32(i) != deleted }
	var sum float64
	var nq int
	for id, l := range labels {
		if l == 3 || nq == 30 {
			continue
		}
		nq++
		res, err := ix.Search(rows[id], 10, SearchOptions{Ef: 64, Filter: bs, Strategy: StrategyTwoHop})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res {
			if h.ID == deleted || !bs.Allow(h.ID) {
				t.Fatalf("returned id %d (deleted %d)", h.ID, deleted)
			}
		}
		sum += recallAt(res, bruteForce(quant.L2, rows, rows[id], 10, allow))
	}
	if got := sum / float64(nq); got < 0.95 {
		t.Errorf("recall@10 %.3f < 0.95 for a filter far from every query", got)
	}
}

// TestTwoHopView runs the two-hop walk on a serialized View with a read
// verifier: same answers as the Index, every read checked.
func TestTwoHopView(t *testing.T) {
	const n, dim, nc = 2000, 16, 20
	rows, labels := clustered(n, dim, nc, 3)
	ix := build(t, Config{Dim: dim, Metric: quant.Cosine, Seed: 3, EfConstruction: 64}, rows)
	v := writeView(t, ix)
	var checks int
	v.SetReadVerifier(func(off, n uint64) error { checks++; return nil })
	bs, _ := sessionFilter(rand.New(rand.NewPCG(1, 1)), labels, n/20, nc)
	for i := 0; i < 10; i++ {
		opts := SearchOptions{Ef: 64, Filter: bs, Strategy: StrategyTwoHop}
		a, err := ix.Search(rows[i*7], 10, opts)
		if err != nil {
			t.Fatal(err)
		}
		b, err := v.Search(rows[i*7], 10, opts)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("query %d: index %v, view %v", i, a, b)
		}
	}
	if checks == 0 {
		t.Fatal("the verifier was never called")
	}
}

func TestTwoHopAllocs(t *testing.T) {
	rows, labels := clustered(2000, 16, 20, 4)
	ix := build(t, Config{Dim: 16, Metric: quant.Cosine, Seed: 4, EfConstruction: 64}, rows)
	bs, _ := sessionFilter(rand.New(rand.NewPCG(2, 2)), labels, 100, 20)
	opts := SearchOptions{Ef: 64, Filter: bs, Strategy: StrategyTwoHop}
	_, _ = ix.Search(rows[1], 10, opts)
	// prepare's copy of the query and the result slice, as in every search.
	if a := testing.AllocsPerRun(50, func() { _, _ = ix.Search(rows[1], 10, opts) }); a > 2 {
		t.Errorf("%v allocations per two-hop search, want <= 2", a)
	}
}

// BenchmarkPlannerBands measures, per selectivity of a session-like filter
// (70% from two home clusters, the rest anywhere) on clustered synthetic
// vectors, the three strategies forced and the planner's choice: CPU
// queries per second and recall@10 against brute force over the allowed
// ids. It is how ScanMax and TwoHopMax were chosen (see the package doc).
func BenchmarkPlannerBands(b *testing.B) {
	const n, dim, nc, k, ef = 50_000, 128, 200, 10, 64
	var rows [][]float32
	var labels []int
	var ix *Index
	for _, sel := range []float64{0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5} {
		b.Run(fmt.Sprintf("n=%d/dim=%d/sel=%g", n, dim, sel), func(b *testing.B) {
			if ix == nil {
				rows, labels = clustered(n, dim, nc, 9)
				ix = build(b, Config{Dim: dim, Metric: quant.Cosine, Seed: 9}, rows)
			}
			r := rand.New(rand.NewPCG(uint64(sel*1e6), 9))
			bs, home := sessionFilter(r, labels, int(sel*n), nc)
			allow := func(i int) bool { return bs.Allow(uint32(i)) }
			var qs [][]float32
			for len(qs) < 100 {
				id := r.IntN(n)
				if len(qs)%2 == 0 && labels[id] != home {
					continue
				}
				q := make([]float32, dim)
				for j := range q {
					q[j] = rows[id][j] + float32(0.05*r.NormFloat64())
				}
				qs = append(qs, q)
			}
			truth := make([][]uint32, len(qs))
			for i, q := range qs {
				truth[i] = bruteForce(quant.Cosine, rows, q, k, allow)
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for _, m := range []struct {
				name  string
				force Strategy
			}{{"plan", StrategyAuto}, {"scan", StrategyScan}, {"twohop", StrategyTwoHop}, {"walk", StrategyWalk}} {
				var recall float64
				cpu0 := threadCPU()
				for i := 0; i < b.N; i++ {
					for j, q := range qs {
						res, err := ix.Search(q, k, SearchOptions{Ef: ef, Filter: bs, Strategy: m.force})
						if err != nil {
							b.Fatal(err)
						}
						if i == 0 {
							recall += recallAt(res, truth[j])
						}
					}
				}
				cpu := threadCPU() - cpu0
				b.ReportMetric(recall/float64(len(qs)), m.name+"_recall@10")
				if cpu > 0 {
					b.ReportMetric(float64(b.N*len(qs))/cpu.Seconds(), m.name+"_cpuQPS")
				}
			}
		})
	}
}

// TestVectorReader: a View whose rescoring reads vectors through
// SetVectorReader answers exactly as one reading its bytes, for every
// strategy, and a reader's error is the search's.
func TestVectorReader(t *testing.T) {
	rows, labels := clustered(2000, 16, 20, 6)
	ix := build(t, Config{Dim: 16, Metric: quant.Cosine, Seed: 6, EfConstruction: 64}, rows)
	var buf bytes.Buffer
	if _, err := ix.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	layout := buf.Bytes()
	plain, err := OpenView(layout)
	if err != nil {
		t.Fatal(err)
	}
	read, err := OpenView(layout)
	if err != nil {
		t.Fatal(err)
	}
	var reads int
	var fail error
	read.SetVectorReader(func(off uint64, dst []byte) error {
		reads++
		if fail != nil {
			return fail
		}
		if off+uint64(len(dst)) > uint64(len(layout)) {
			return errors.New("read past the layout")
		}
		copy(dst, layout[off:])
		return nil
	})
	bs, _ := sessionFilter(rand.New(rand.NewPCG(3, 3)), labels, 300, 20)
	for _, st := range []Strategy{StrategyAuto, StrategyWalk, StrategyScan, StrategyTwoHop} {
		for i := 0; i < 20; i++ {
			opts := SearchOptions{Ef: 64, Filter: bs, Strategy: st}
			a, err := plain.Search(rows[i*31], 10, opts)
			if err != nil {
				t.Fatal(err)
			}
			b, err := read.Search(rows[i*31], 10, opts)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("%v query %d: bytes %v, reader %v", st, i, a, b)
			}
		}
	}
	if reads == 0 {
		t.Fatal("the reader was never called")
	}
	fail = errors.New("damaged")
	if _, err := read.Search(rows[0], 10, SearchOptions{}); err != fail {
		t.Fatalf("search with a failing reader: %v", err)
	}
	if res, err := read.Search(rows[0], 10, SearchOptions{NoRescore: true}); err != nil || len(res) != 10 {
		t.Fatalf("NoRescore reads no vector: %v, %d results", err, len(res))
	}
}
