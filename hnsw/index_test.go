package hnsw

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/engramdb/engram/quant"
)

func TestBadInput(t *testing.T) {
	ix, err := New(Config{Dim: 4, Metric: quant.Cosine})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Insert([]float32{1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, tc := range []struct {
		name string
		vec  []float32
		want error
	}{
		{"short", []float32{1, 2, 3}, ErrDimension},
		{"long", []float32{1, 2, 3, 4, 5}, ErrDimension},
		{"nil", nil, ErrDimension},
		{"nan", []float32{1, nan, 0, 0}, ErrInvalid},
		{"inf", []float32{inf, 0, 0, 0}, ErrInvalid},
		{"zero under cosine", []float32{0, 0, 0, 0}, ErrInvalid},
	} {
		if _, err := ix.Insert(tc.vec); !errors.Is(err, tc.want) {
			t.Errorf("Insert(%s) = %v, want %v", tc.name, err, tc.want)
		}
		if _, err := ix.Search(tc.vec, 1, SearchOptions{}); !errors.Is(err, tc.want) {
			t.Errorf("Search(%s) = %v, want %v", tc.name, err, tc.want)
		}
	}
	if ix.Len() != 1 {
		t.Fatalf("bad inserts changed the index: Len %d", ix.Len())
	}
	q := []float32{1, 1, 0, 0}
	for _, tc := range []struct {
		name string
		k    int
		opts SearchOptions
	}{
		{"k=0", 0, SearchOptions{}},
		{"k<0", -1, SearchOptions{}},
		{"ef<k", 10, SearchOptions{Ef: 5}},
		{"width<0", 1, SearchOptions{Width: -1}},
		{"width>DefaultWidth", 1, SearchOptions{Width: DefaultWidth + 1}},
	} {
		if _, err := ix.Search(q, tc.k, tc.opts); !errors.Is(err, ErrBadArgument) {
			t.Errorf("Search(%s) = %v, want ErrBadArgument", tc.name, err)
		}
	}
	for _, id := range []uint32{1, 1000, math.MaxUint32} {
		if err := ix.Delete(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Delete(%d) = %v, want ErrNotFound", id, err)
		}
	}
	if err := ix.Delete(0); err != nil {
		t.Fatal(err)
	}
	if err := ix.Delete(0); !errors.Is(err, ErrDeleted) {
		t.Errorf("second Delete = %v, want ErrDeleted", err)
	}
	for _, cfg := range []Config{
		{Dim: 0, Metric: quant.L2},
		{Dim: 4},
		{Dim: 4, Metric: quant.L2, M: 1},
		{Dim: 4, Metric: quant.L2, EfConstruction: -1},
		{Dim: 4, Metric: quant.L2, Quantizer: &quant.Quantizer{Dim: 3, Metric: quant.L2, Scale: 1}},
		{Dim: 4, Metric: quant.L2, Quantizer: &quant.Quantizer{Dim: 4, Metric: quant.L2, Scale: 0}},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrBadArgument) {
			t.Errorf("New(%+v) = %v, want ErrBadArgument", cfg, err)
		}
	}
}

func TestEmptyAndTiny(t *testing.T) {
	for _, m := range []quant.Metric{quant.Cosine, quant.Dot, quant.L2} {
		ix, err := New(Config{Dim: 3, Metric: m})
		if err != nil {
			t.Fatal(err)
		}
		res, err := ix.Search([]float32{1, 2, 3}, 5, SearchOptions{})
		if err != nil || len(res) != 0 {
			t.Fatalf("%v: empty search = %v, %v", m, res, err)
		}
		rows := [][]float32{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
		for _, r := range rows {
			if _, err := ix.Insert(r); err != nil {
				t.Fatal(err)
			}
		}
		res, err = ix.Search([]float32{0, 0.9, 0.1}, 5, SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 3 || res[0].ID != 1 {
			t.Fatalf("%v: got %v, want id 1 first of 3", m, res)
		}
		for i := 1; i < len(res); i++ {
			if res[i].Distance < res[i-1].Distance {
				t.Fatalf("%v: results not sorted: %v", m, res)
			}
		}
	}
}

// syntheticRecall builds an index on clustered data and measures recall@10
// against brute force.
func syntheticRecall(t *testing.T, ix *Index, rows, queries [][]float32, m quant.Metric, ef int, allow func(int) bool, f Filter) float64 {
	t.Helper()
	var sum float64
	for _, q := range queries {
		res, err := ix.Search(q, 10, SearchOptions{Ef: ef, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if allow != nil && !allow(int(r.ID)) {
				t.Fatalf("result %d not allowed by the filter", r.ID)
			}
			if ix.Deleted(r.ID) {
				t.Fatalf("deleted id %d returned", r.ID)
			}
		}
		sum += recallAt(res, bruteForce(m, rows, q, 10, allow))
	}
	return sum / float64(len(queries))
}

func TestSyntheticRecallAllMetrics(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 1000
	}
	rows := synthetic(n, 32, 1)
	queries := synthetic(50, 32, 2)
	for _, m := range []quant.Metric{quant.Cosine, quant.Dot, quant.L2} {
		ix := build(t, Config{Dim: 32, Metric: m, Seed: 3}, rows)
		if r := syntheticRecall(t, ix, rows, queries, m, 64, nil, nil); r < 0.95 {
			t.Errorf("%v recall@10 %.3f < 0.95", m, r)
		}
		for width := 1; width <= DefaultWidth; width++ {
			var sum float64
			for _, q := range queries {
				res, err := ix.Search(q, 10, SearchOptions{Ef: 64, Width: width})
				if err != nil {
					t.Fatal(err)
				}
				sum += recallAt(res, bruteForce(m, rows, q, 10, nil))
			}
			if r := sum / float64(len(queries)); r < 0.95 {
				t.Errorf("%v width %d: recall@10 %.3f < 0.95", m, width, r)
			}
		}
	}
}

func TestFiltered(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10k-vector index; skipped in -short")
	}
	ds := loadDataset(t, "glove10k")
	ix := build(t, Config{Dim: 100, Metric: ds.metric, Seed: 1}, ds.base)
	queries := ds.queries[:200]
	r := rand.New(rand.NewPCG(7, 7))
	for _, sel := range []float64{0.5, 0.1, 0.01} {
		bs := NewBitset(len(ds.base))
		for id := range ds.base {
			if r.Float64() < sel {
				_ = bs.Set(uint32(id))
			}
		}
		allow := func(i int) bool { return bs.Allow(uint32(i)) }
		for _, f := range []Filter{bs, FilterFunc(bs.Allow)} {
			rc := syntheticRecall(t, ix, ds.base, queries, ds.metric, recallEf, allow, f)
			t.Logf("selectivity %.2f filter %T: recall@10 %.4f", sel, f, rc)
			if rc < 0.9 {
				t.Errorf("selectivity %.2f %T: recall@10 %.4f < 0.9", sel, f, rc)
			}
		}
		// Both strategies, forced: the walk and the scan.
		for _, scan := range []bool{false, true} {
			var sum float64
			for _, q := range queries {
				res, err := searchMode(ix, q, 10, recallEf, bs, scan)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					if !bs.Allow(r.ID) {
						t.Fatalf("scan=%v: id %d not allowed", scan, r.ID)
					}
				}
				sum += recallAt(res, bruteForce(ds.metric, ds.base, q, 10, allow))
			}
			rc := sum / float64(len(queries))
			t.Logf("selectivity %.2f scan=%v: recall@10 %.4f", sel, scan, rc)
			if rc < 0.9 {
				t.Errorf("selectivity %.2f scan=%v: recall@10 %.4f < 0.9", sel, scan, rc)
			}
		}
	}
}

func TestChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10k-vector index; skipped in -short")
	}
	ds := loadDataset(t, "glove10k")
	ix := build(t, Config{Dim: 100, Metric: ds.metric, Seed: 1}, ds.base)
	r := rand.New(rand.NewPCG(9, 9))
	perm := r.Perm(len(ds.base))
	// rows[id] is the vector now stored under id; deleted ids map to nil.
	rows := append([][]float32(nil), ds.base...)
	for _, i := range perm[:len(perm)/2] {
		if err := ix.Delete(uint32(i)); err != nil {
			t.Fatal(err)
		}
		rows[i] = nil
	}
	// Insert as many new points: the deleted vectors again, under new ids,
	// plus a small perturbation so they are new points.
	for _, i := range perm[:len(perm)/2] {
		v := append([]float32(nil), ds.base[i]...)
		for j := range v {
			v[j] += 0.01 * float32(r.NormFloat64())
		}
		id, err := ix.Insert(v)
		if err != nil {
			t.Fatal(err)
		}
		if int(id) != len(rows) {
			t.Fatalf("new id %d, want %d", id, len(rows))
		}
		rows = append(rows, v)
	}
	ix.Repair()
	if ix.Live() != len(ds.base) {
		t.Fatalf("live %d, want %d", ix.Live(), len(ds.base))
	}
	queries := ds.queries[:200]
	rc := syntheticRecallRows(t, ix, rows, queries, ds.metric, recallEf)
	t.Logf("after 50%% churn: recall@10 %.4f at ef=%d", rc, recallEf)
	if rc < 0.93 {
		t.Fatalf("recall@10 after churn %.4f < 0.93", rc)
	}
}

// syntheticRecallRows is syntheticRecall where nil rows are deleted.
func syntheticRecallRows(t *testing.T, ix *Index, rows, queries [][]float32, m quant.Metric, ef int) float64 {
	dense := make([][]float32, len(rows))
	for i, r := range rows {
		dense[i] = r
		if r == nil {
			dense[i] = make([]float32, len(queries[0]))
			dense[i][0] = 1
		}
	}
	return syntheticRecall(t, ix, dense, queries, m, ef, func(i int) bool { return rows[i] != nil }, nil)
}

// TestConcurrent inserts from three goroutines while two search; with
// deletes, one searcher also deletes random ids as it goes.
func TestConcurrent(t *testing.T) {
	for _, deletes := range []bool{false, true} {
		t.Run(fmt.Sprintf("deletes=%v", deletes), func(t *testing.T) { testConcurrent(t, deletes) })
	}
}

func testConcurrent(t *testing.T, deletes bool) {
	n := 4000
	if testing.Short() {
		n = 1500
	}
	rows := synthetic(n, 24, 4)
	ix, err := New(Config{Dim: 24, Metric: quant.Cosine, Seed: 1, M: 8, EfConstruction: 64})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, 16)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if _, err := ix.Insert(rows[i]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	var sg sync.WaitGroup
	for w := 0; w < 2; w++ {
		sg.Add(1)
		go func(w int) {
			defer sg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := ix.Search(rows[r.IntN(len(rows))], 5, SearchOptions{})
				if err != nil {
					errs <- err
					return
				}
				for _, x := range res {
					if int(x.ID) >= ix.Len() {
						errs <- fmt.Errorf("result id %d beyond Len", x.ID)
						return
					}
				}
				if deletes && w == 0 && ix.Len() > 10 {
					// Deletes race with inserts and searches too.
					id := uint32(r.IntN(ix.Len()))
					if err := ix.Delete(id); err != nil && !errors.Is(err, ErrDeleted) && !errors.Is(err, ErrNotFound) {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	for i := range rows {
		next <- i
	}
	close(next)
	wg.Wait()
	close(stop)
	sg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if ix.Len() != n {
		t.Fatalf("Len %d, want %d", ix.Len(), n)
	}
	ix.Repair()
	if u := ix.unreached(); u != 0 {
		t.Fatalf("%d live nodes unreachable after Repair", u)
	}
	// Every live vector must find itself.
	found := 0
	live := 0
	for id := 0; id < n; id++ {
		if ix.Deleted(uint32(id)) {
			continue
		}
		live++
		res, err := ix.Search(ix.Vector(uint32(id)), 1, SearchOptions{Ef: 64})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 1 && ix.Deleted(res[0].ID) {
			t.Fatalf("deleted id %d returned", res[0].ID)
		}
		if len(res) == 1 && res[0].ID == uint32(id) {
			found++
		}
	}
	t.Logf("deletes=%v: %d of %d live vectors find themselves", deletes, found, live)
	// Deletes racing inserts cut nodes off (up to half before Repair
	// reconnected them); over 70 runs the worst after Repair was 0.9993.
	bar := 0.98
	if float64(found) < bar*float64(live) {
		t.Fatalf("only %d of %d live vectors find themselves", found, live)
	}
}

func TestDeterministic(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 500
	}
	rows := synthetic(n, 16, 5)
	var prev []byte
	for i := 0; i < 2; i++ {
		ix := build(t, Config{Dim: 16, Metric: quant.L2, Seed: 42}, rows)
		var buf bytes.Buffer
		if _, err := ix.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		if prev != nil && !bytes.Equal(prev, buf.Bytes()) {
			t.Fatal("two builds with the same seed and order differ")
		}
		prev = buf.Bytes()
	}
	ix := build(t, Config{Dim: 16, Metric: quant.L2, Seed: 43}, rows)
	var buf bytes.Buffer
	if _, err := ix.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(prev, buf.Bytes()) {
		t.Fatal("a different seed built the identical graph")
	}
}

func TestNoRescoreAndDistances(t *testing.T) {
	rows := synthetic(500, 16, 6)
	ix := build(t, Config{Dim: 16, Metric: quant.Dot, Seed: 1}, rows)
	q := rows[7]
	a, err := ix.Search(q, 5, SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ix.Search(q, 5, SearchOptions{NoRescore: true})
	if err != nil {
		t.Fatal(err)
	}
	if a[0].ID != 7 || b[0].ID != 7 {
		t.Fatalf("self not first: %v / %v", a, b)
	}
	want := -quant.DotFloat32(q, q)
	if math.Abs(float64(a[0].Distance-want)) > 1e-5 {
		t.Fatalf("rescored distance %v, want %v", a[0].Distance, want)
	}
	if math.Abs(float64(b[0].Distance-want)) > 0.05 {
		t.Fatalf("code distance %v far from %v", b[0].Distance, want)
	}
}

// TestDuplicates: a crowd of identical vectors must not cut the distinct
// ones off the graph, and must itself stay searchable.
func TestDuplicates(t *testing.T) {
	for _, m := range []quant.Metric{quant.Cosine, quant.Dot, quant.L2} {
		ix, err := New(Config{Dim: 4, Metric: m, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		dup := []float32{1, 2, 3, 4}
		var rows [][]float32
		for i := 0; i < 200; i++ {
			v := dup
			if i%2 == 1 {
				v = []float32{float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())}
			}
			if _, err := ix.Insert(v); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, v)
		}
		var sum float64
		for id := 1; id < len(rows); id += 2 {
			res, err := ix.Search(rows[id], 10, SearchOptions{Ef: 64})
			if err != nil {
				t.Fatal(err)
			}
			// Ties among the duplicates make their order arbitrary: count
			// distinct ids only.
			var want []uint32
			for _, w := range bruteForce(m, rows, rows[id], 10, nil) {
				if w%2 == 1 {
					want = append(want, w)
				}
			}
			var got []Result
			for _, x := range res {
				if x.ID%2 == 1 {
					got = append(got, x)
				}
			}
			sum += recallAt(got, want)
		}
		// Dot is not a metric (a vector is not its own nearest), which
		// graph search serves less well in 4 dimensions.
		bar := 0.95
		if m == quant.Dot {
			bar = 0.9
		}
		if rc := sum / float64(len(rows)/2); rc < bar {
			t.Errorf("%v: recall@10 of the distinct vectors %.3f < %.2f", m, rc, bar)
		}
		res, err := ix.Search(dup, 10, SearchOptions{Ef: 64})
		if err != nil {
			t.Fatal(err)
		}
		if m != quant.Dot { // under Dot a longer vector can beat the duplicate
			for _, x := range res {
				if x.ID%2 != 0 {
					t.Errorf("%v: search for the duplicate returned distinct id %d: %v", m, x.ID, res)
					break
				}
			}
		}
	}
}

// TestAppendVector: AppendVector appends the vector Vector returns (the
// stored form), leaves dst as it was for an unknown id, and reuses dst's
// array when it has room.
func TestAppendVector(t *testing.T) {
	rows, _ := clustered(50, 8, 3, 2)
	ix := build(t, Config{Dim: 8, Metric: quant.Cosine, Seed: 2}, rows)
	buf := make([]float32, 0, 8)
	for id := uint32(0); id < 50; id++ {
		got := ix.AppendVector(buf[:0], id)
		if !slices.Equal(got, ix.Vector(id)) || &got[0] != &buf[:1][0] {
			t.Fatalf("id %d: %v, Vector %v (same array: %v)", id, got, ix.Vector(id), &got[0] == &buf[:1][0])
		}
	}
	head := []float32{1, 2}
	if got := ix.AppendVector(head, 50); !slices.Equal(got, head) {
		t.Fatalf("unknown id: %v", got)
	}
	if got := ix.AppendVector(head[:1], 3); len(got) != 9 || got[0] != 1 || !slices.Equal(got[1:], ix.Vector(3)) {
		t.Fatalf("appended after a prefix: %v", got)
	}
}
