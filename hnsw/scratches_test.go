package hnsw

import (
	"runtime"
	"sync"
	"testing"

	"github.com/engramdb/engram/quant"
)

// TestScratchesSurviveGC: a search after garbage collections reuses the
// scratch of the searches before them instead of allocating new visited
// marks (two bytes a node, 2 MB at 1M nodes, each fresh page faulted in
// by the search that marks it).
func TestScratchesSurviveGC(t *testing.T) {
	const n = 20_000
	rows := synthetic(n, 8, 3)
	ix := build(t, Config{Dim: 8, Metric: quant.L2, Seed: 3, EfConstruction: 32}, rows)
	v, err := OpenView(serialize(t, ix))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		search func() ([]Result, error)
	}{
		{"index", func() ([]Result, error) { return ix.Search(rows[7], 10, SearchOptions{}) }},
		{"view", func() ([]Result, error) { return v.Search(rows[7], 10, SearchOptions{}) }},
	} {
		if _, err := c.search(); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC() // a sync.Pool drops what it held over two collections
		runtime.ReadMemStats(&before)
		res, err := c.search()
		runtime.ReadMemStats(&after)
		if err != nil || len(res) != 10 {
			t.Fatalf("%s: %d results, %v", c.name, len(res), err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got >= 2*n {
			t.Errorf("%s: a search after two collections allocated %d bytes, want under %d (the marks again)", c.name, got, 2*n)
		}
	}
}

// TestKeptBounded: kept keeps at most maxKept, hands back the last one
// put, and makes new ones when none are kept, also when many goroutines
// take and return them at once.
func TestKeptBounded(t *testing.T) {
	var p kept[scratch]
	held := make([]*scratch, 3*maxKept())
	for i := range held {
		held[i] = p.get()
		held[i].epoch = uint16(i + 1)
	}
	for _, s := range held {
		p.put(s)
	}
	if len(p.free) != maxKept() {
		t.Fatalf("%d kept, want %d", len(p.free), maxKept())
	}
	if s := p.get(); s != held[maxKept()-1] {
		t.Fatalf("get returned %p, want the last one kept, %p", s, held[maxKept()-1])
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				s := p.get()
				s.begin(16)
				p.put(s)
			}
		}()
	}
	wg.Wait()
	if len(p.free) > maxKept() {
		t.Fatalf("%d kept, want at most %d", len(p.free), maxKept())
	}
}

// TestReserve: a View's reserved scratches have marks for every node, so
// its first searches allocate none, and Reserve keeps no more than
// maxKept.
func TestReserve(t *testing.T) {
	const n = 20_000
	rows := synthetic(n, 8, 5)
	v, err := OpenView(serialize(t, build(t, Config{Dim: 8, Metric: quant.L2, Seed: 5, EfConstruction: 32}, rows)))
	if err != nil {
		t.Fatal(err)
	}
	v.Reserve(-1)
	v.Reserve(0)
	if len(v.pool.free) != 0 {
		t.Fatalf("%d scratches kept after Reserve(-1) and Reserve(0)", len(v.pool.free))
	}
	v.Reserve(2)
	if len(v.pool.free) != 2 {
		t.Fatalf("%d scratches kept after Reserve(2)", len(v.pool.free))
	}
	for _, s := range v.pool.free {
		if len(s.marks) < n {
			t.Fatalf("reserved marks for %d nodes, want %d", len(s.marks), n)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := v.Search(rows[3], 10, SearchOptions{}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got >= 2*n {
		t.Errorf("first search after Reserve allocated %d bytes, want under %d", got, 2*n)
	}
	v.Reserve(1000)
	if len(v.pool.free) != maxKept() {
		t.Fatalf("%d kept after Reserve(1000), want %d", len(v.pool.free), maxKept())
	}
}

// BenchmarkScratchGetPut prices what a search pays to take and return its
// scratch: kept (a mutex and a slice) against the sync.Pool it replaced.
// Either is tens of nanoseconds against a search's tens of microseconds.
func BenchmarkScratchGetPut(b *testing.B) {
	b.Run("kept", func(b *testing.B) {
		var p kept[scratch]
		for b.Loop() {
			p.put(p.get())
		}
	})
	b.Run("sync.Pool", func(b *testing.B) {
		var p sync.Pool
		for b.Loop() {
			s, _ := p.Get().(*scratch)
			if s == nil {
				s = new(scratch)
			}
			p.Put(s)
		}
	})
}
