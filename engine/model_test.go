package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

// oracle is the in-memory model the engine is compared against.
type oracle struct {
	cfg  CollectionConfig
	recs map[string]Record // vectors in stored (normalized) form
}

func (o *oracle) upsert(batch []Record) {
	for _, r := range batch {
		v, err := validateRecord(o.cfg, &r)
		if err != nil {
			panic(err)
		}
		r = r.Clone()
		r.Vector = v
		o.recs[r.ID] = r
	}
}

func (o *oracle) search(q []float32, k int, f *Filter) []string {
	qv, _ := validateRecord(o.cfg, &Record{ID: "q", Vector: q})
	type hd struct {
		id string
		d  float32
	}
	var all []hd
	for id, r := range o.recs {
		m := r.Meta
		if f.match(func(k string) (Value, bool) { v, ok := m[k]; return v, ok }) {
			all = append(all, hd{id, quant.FloatDistance(o.cfg.Metric, qv, r.Vector)})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].d != all[j].d {
			return all[i].d < all[j].d
		}
		return all[i].id < all[j].id
	})
	var ids []string
	for i := 0; i < k && i < len(all); i++ {
		ids = append(ids, all[i].id)
	}
	return ids
}

// nearTie reports whether two result lists differ only where the oracle's
// distances are within float noise of each other.
func (o *oracle) nearTie(q []float32, got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	qv, _ := validateRecord(o.cfg, &Record{ID: "q", Vector: q})
	for i := range got {
		r, ok := o.recs[got[i]]
		if !ok {
			return false
		}
		dg := quant.FloatDistance(o.cfg.Metric, qv, r.Vector)
		dw := quant.FloatDistance(o.cfg.Metric, qv, o.recs[want[i]].Vector)
		if math.Abs(float64(dg-dw)) > 1e-4 {
			return false
		}
	}
	return true
}

func (o *oracle) count(f *Filter) int {
	n := 0
	for _, r := range o.recs {
		m := r.Meta
		if f.match(func(k string) (Value, bool) { v, ok := m[k]; return v, ok }) {
			n++
		}
	}
	return n
}

func randFilter(r *rand.Rand) *Filter {
	leaf := func() *Filter {
		switch r.IntN(7) {
		case 0:
			return Eq("session", String(fmt.Sprintf("s%d", r.IntN(4))))
		case 1:
			return Range("n", Int(int64(r.IntN(200))), Int(int64(200+r.IntN(400))))
		case 2:
			return In("tags", String(fmt.Sprintf("m%d", r.IntN(5))), String("zz"))
		case 3:
			return Exists("opt")
		case 4:
			return Ne("session", String("s1"))
		case 5:
			return Range("at", Time(time.Unix(1000+int64(r.IntN(300)), 0)), Value{})
		default:
			return Eq("tags", String(fmt.Sprintf("m%d", r.IntN(5))))
		}
	}
	switch r.IntN(6) {
	case 0:
		return nil
	case 1:
		return And(Eq("session", String(fmt.Sprintf("s%d", r.IntN(3)))), leaf())
	case 2:
		return Or(leaf(), leaf())
	case 3:
		return Not(leaf())
	default:
		return leaf()
	}
}

func randRecord(r *rand.Rand, dim int, id string, now int) Record {
	n := r.IntN(600)
	rec := Record{
		ID: id, Vector: randVec(r, dim), Text: fmt.Sprintf("memo %s word%d word%d", id, r.IntN(20), r.IntN(20)),
		Meta: Metadata{
			"session": String(fmt.Sprintf("s%d", r.IntN(4))),
			"n":       Int(int64(n)),
			"tags":    StringList(fmt.Sprintf("m%d", r.IntN(5)), fmt.Sprintf("m%d", r.IntN(5))),
			"at":      Time(time.Unix(1000+int64(r.IntN(400)), 0)),
		},
		Created: time.Unix(int64(now), 0).UTC(), Updated: time.Unix(int64(now+1), 0).UTC(),
	}
	if r.IntN(3) == 0 {
		rec.Meta["opt"] = Float(r.Float64())
	}
	return rec
}

// TestModel runs random operations against the engine and the oracle and
// compares every read: Get, Count, exact filtered Search, and approximate
// Search recall.
func TestModel(t *testing.T) {
	steps := 600
	if testing.Short() {
		steps = 150
	}
	for _, metric := range []quant.Metric{quant.Cosine, quant.L2} {
		t.Run(metric.String(), func(t *testing.T) { runModel(t, metric, steps, uint64(metric)) })
	}
}

func runModel(t *testing.T, metric quant.Metric, steps int, seed uint64) {
	dir := filepath.Join(t.TempDir(), "s")
	const dim = 12
	cfg := CollectionConfig{Name: "m", Dim: dim, Metric: metric, Fingerprint: "x"}
	o := &oracle{cfg: cfg, recs: map[string]Record{}}
	r := rand.New(rand.NewPCG(seed, 99))
	db := openT(t, dir, testOpts())
	defer func() { db.Close() }()
	c, err := db.CreateCollection(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ids := func() []string {
		out := make([]string, 0, len(o.recs))
		for id := range o.recs {
			out = append(out, id)
		}
		sort.Strings(out)
		return out
	}
	next := 0
	for step := 0; step < steps; step++ {
		switch op := r.IntN(20); {
		case op < 6: // upsert: new ids and overwrites
			var batch []Record
			seen := map[string]bool{}
			for range 1 + r.IntN(20) {
				var id string
				if len(o.recs) > 0 && r.IntN(3) == 0 {
					all := ids()
					id = all[r.IntN(len(all))]
				} else {
					id = fmt.Sprintf("id%05d", next)
					next++
				}
				if seen[id] {
					continue
				}
				seen[id] = true
				batch = append(batch, randRecord(r, dim, id, step))
			}
			if err := c.Upsert(ctx, batch); err != nil {
				t.Fatalf("step %d upsert: %v", step, err)
			}
			o.upsert(batch)
		case op < 8: // delete by id
			all := ids()
			var del []string
			for range r.IntN(5) {
				if len(all) > 0 {
					del = append(del, all[r.IntN(len(all))])
				}
			}
			del = append(del, "missing")
			want := 0
			for _, id := range slices.Compact(slices.Sorted(slices.Values(del))) {
				if _, ok := o.recs[id]; ok {
					want++
					delete(o.recs, id)
				}
			}
			n, err := c.Delete(del...)
			if err != nil || n != want {
				t.Fatalf("step %d Delete = %d, %v; want %d", step, n, err, want)
			}
		case op == 8: // delete by filter
			f := And(Eq("session", String(fmt.Sprintf("s%d", r.IntN(4)))), Range("n", Int(int64(r.IntN(600))), Value{}))
			want := 0
			for id, rec := range o.recs {
				m := rec.Meta
				if f.match(func(k string) (Value, bool) { v, ok := m[k]; return v, ok }) {
					delete(o.recs, id)
					want++
				}
			}
			n, err := c.DeleteWhere(f)
			if err != nil || n != want {
				t.Fatalf("step %d DeleteWhere = %d, %v; want %d", step, n, err, want)
			}
		case op == 9: // touch
			all := ids()
			var tids []string
			for range 1 + r.IntN(4) {
				if len(all) > 0 {
					tids = append(tids, all[r.IntN(len(all))])
				}
			}
			at := time.Unix(int64(5000+step), 0).UTC()
			if err := c.Touch(append(tids, "nope"), at); err != nil {
				t.Fatal(err)
			}
			for _, id := range slices.Compact(slices.Sorted(slices.Values(tids))) {
				rec := o.recs[id]
				rec.AccessCount++
				rec.LastAccess = at
				o.recs[id] = rec
			}
		case op == 10:
			if err := db.Flush(); err != nil {
				t.Fatalf("step %d flush: %v", step, err)
			}
		case op == 11:
			if r.IntN(2) == 0 {
				if err := db.Compact(); err != nil {
					t.Fatalf("step %d compact: %v", step, err)
				}
			} else if err := db.compact(false); err != nil {
				t.Fatalf("step %d background compact: %v", step, err)
			}
		case op == 12:
			db.noCloseFlush = r.IntN(2) == 0 // reopen from the WAL or from segments
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openT(t, dir, testOpts())
			if c, err = db.Collection("m"); err != nil {
				t.Fatal(err)
			}
		default: // reads
			f := randFilter(r)
			k := 1 + r.IntN(10)
			q := randVec(r, dim)
			hits, err := c.Search(ctx, SearchRequest{Vector: q, K: k, Filter: f, Exact: true})
			if err != nil {
				t.Fatalf("step %d search: %v", step, err)
			}
			var got []string
			for _, h := range hits {
				got = append(got, h.ID)
			}
			if want := o.search(q, k, f); !slices.Equal(got, want) && !o.nearTie(q, got, want) {
				t.Fatalf("step %d exact search %v:\n got %v\nwant %v", step, f, got, want)
			}
			n, err := c.Count(f)
			if err != nil || n != o.count(f) {
				t.Fatalf("step %d Count(%v) = %d, %v; want %d", step, f, n, err, o.count(f))
			}
			all := ids()
			if len(all) > 0 {
				id := all[r.IntN(len(all))]
				got, err := c.Get(id)
				if err != nil {
					t.Fatalf("step %d Get(%s): %v", step, id, err)
				}
				want := o.recs[id]
				if !sameRecord(got, want) {
					t.Fatalf("step %d Get(%s):\n got %+v\nwant %+v", step, id, got, want)
				}
			}
		}
	}
	// Final full comparison, then approximate search recall.
	for id, want := range o.recs {
		got, err := c.Get(id)
		if err != nil || !sameRecord(got, want) {
			t.Fatalf("final Get(%s) = %+v, %v; want %+v", id, got, err, want)
		}
	}
	if err := db.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	found, total := 0, 0
	for range 20 {
		q := randVec(r, dim)
		want := o.search(q, 10, nil)
		hits, err := c.Search(ctx, SearchRequest{Vector: q, K: 10, Ef: 100})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, h := range hits {
			got[h.ID] = true
		}
		for _, id := range want {
			total++
			if got[id] {
				found++
			}
		}
	}
	if recall := float64(found) / float64(max(total, 1)); recall < 0.9 {
		t.Fatalf("approximate recall@10 %.3f < 0.9", recall)
	}
}

func sameRecord(a, b Record) bool {
	if a.ID != b.ID || a.Text != b.Text || !a.Created.Equal(b.Created) || !a.Updated.Equal(b.Updated) ||
		!a.LastAccess.Equal(b.LastAccess) || a.AccessCount != b.AccessCount || len(a.Vector) != len(b.Vector) ||
		len(a.Meta) != len(b.Meta) {
		return false
	}
	// hnsw normalizes cosine vectors again when they are inserted (and
	// compaction re-inserts them), which may move the last bit.
	for i := range a.Vector {
		if math.Abs(float64(a.Vector[i]-b.Vector[i])) > 1e-6 {
			return false
		}
	}
	for k, v := range a.Meta {
		if w, ok := b.Meta[k]; !ok || !v.Equal(w) {
			return false
		}
	}
	return true
}
