package engine

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

// TestTimeRange: every time field (Created, Updated, LastAccess, Touch,
// time metadata, filter bounds) keeps MinTime..MaxTime exactly through the
// memtable, a flush and a reopen, and refuses anything outside with
// ErrInvalid, writing nothing. (Before, 9999-12-31 was accepted and came
// back as 1816-03-30 after a flush.)
func TestTimeRange(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "t", Dim: 4, Metric: quant.L2})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	edges := []time.Time{MinTime, MinTime.Add(1), time.Unix(0, 0).UTC(), MaxTime.Add(-1), MaxTime}
	var recs []Record
	for i, at := range edges {
		rec := mkRecords(r, 4, i, 1)[0]
		rec.Created, rec.Updated, rec.LastAccess = at, at, at
		rec.Meta["at"] = Time(at)
		recs = append(recs, rec)
	}
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	check := func(stage string) {
		t.Helper()
		for i, want := range edges {
			got, err := c.Get(recs[i].ID)
			if err != nil {
				t.Fatal(err)
			}
			gt, _ := got.Meta["at"].TimeValue()
			if !got.Created.Equal(want) || !got.Updated.Equal(want) || !got.LastAccess.Equal(want) || !gt.Equal(want) {
				t.Fatalf("%s: %s holds %v/%v/%v/%v, want %v", stage, recs[i].ID, got.Created, got.Updated, got.LastAccess, gt, want)
			}
		}
		n, err := c.Count(Range("at", Time(MinTime), Time(MaxTime)))
		if err != nil || n != len(edges) {
			t.Fatalf("%s: Range(MinTime, MaxTime) counts %d, %v", stage, n, err)
		}
	}
	check("memtable")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("segment")
	db.Close()
	db = openT(t, dir, testOpts())
	defer db.Close()
	c, _ = db.Collection("t")
	check("reopened")

	bad := []time.Time{
		MaxTime.Add(1), MinTime.Add(-1),
		time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC),
		time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for _, at := range bad {
		for field := range 4 {
			rec := mkRecords(r, 4, 100, 1)[0]
			switch field {
			case 0:
				rec.Created = at
			case 1:
				rec.Updated = at
			case 2:
				rec.LastAccess = at
			case 3:
				rec.Meta["at"] = Time(at)
			}
			if err := c.Upsert(ctx, []Record{rec}); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Upsert with time field %d = %v: %v, want ErrInvalid", field, at, err)
			}
		}
		if err := c.Touch([]string{recs[0].ID}, at); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Touch at %v: %v, want ErrInvalid", at, err)
		}
		if _, err := c.Count(Range("at", Time(MinTime), Time(at))); !errors.Is(err, ErrInvalidFilter) {
			t.Fatalf("filter bound %v: %v, want ErrInvalidFilter", at, err)
		}
		if err := CheckTime(at); !errors.Is(err, ErrInvalid) {
			t.Fatalf("CheckTime(%v) = %v", at, err)
		}
	}
	if n, _ := c.Count(nil); n != len(edges) {
		t.Fatalf("refused writes changed the store: %d records", n)
	}
	if err := CheckTime(time.Time{}); err != nil {
		t.Fatalf("the zero time (unset) is refused: %v", err)
	}
}
