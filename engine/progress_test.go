package engine

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/quant"
)

// TestCheckAndCompactProgress: CheckProgress and CompactProgress report record counts that
// only grow and end at the total, which is the number of segment records they go through.
func TestCheckAndCompactProgress(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "s"), testOpts())
	defer db.Close()
	c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 4, Metric: quant.L2})
	r := rand.New(rand.NewPCG(7, 7))
	want := int64(0)
	for i := range 3 {
		n := 1100 + i*200
		if err := c.Upsert(ctx, mkRecords(r, 4, i*10000, n)); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		want += int64(n)
	}
	for _, op := range []struct {
		name string
		run  func(Progress) error
	}{{"check", db.CheckProgress}, {"compact", db.CompactProgress}, {"check after compact", db.CheckProgress}} {
		name, run := op.name, op.run
		var reports [][2]int64
		if err := run(func(done, total int64) { reports = append(reports, [2]int64{done, total}) }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(reports) < 3 {
			t.Fatalf("%s: %d reports, want one per 1024 records or so: %v", name, len(reports), reports)
		}
		for i, rp := range reports {
			if rp[1] != want || rp[0] > rp[1] || (i > 0 && rp[0] < reports[i-1][0]) {
				t.Fatalf("%s: report %d = %v of %d (all: %v)", name, i, rp, want, reports)
			}
		}
		if last := reports[len(reports)-1]; last[0] != want {
			t.Fatalf("%s: last report %v, want %d done", name, last, want)
		}
	}
}
