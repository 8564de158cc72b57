package engine

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

// BenchmarkMetaFilter measures filtered Count and Scan over one flushed
// segment of 100k records with ten metadata fields each: a filter on one
// field should cost the same whatever the other fields hold.
//
//	go test ./engine -run '^$' -bench MetaFilter -benchtime 10x
func BenchmarkMetaFilter(b *testing.B) {
	const n = 100_000
	dir := filepath.Join(b.TempDir(), "store")
	db, err := Open(dir, Options{UnsafeNoSync: true, FlushBytes: -1, CompactInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateCollection(CollectionConfig{Name: "m", Dim: 2, Metric: quant.L2})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for lo := 0; lo < n; lo += 5000 {
		batch := make([]Record, 0, 5000)
		for i := lo; i < lo+5000; i++ {
			batch = append(batch, Record{ID: fmt.Sprintf("doc-%07d", i), Vector: []float32{r.Float32(), r.Float32()},
				Text: fmt.Sprintf("record %d", i), Meta: Metadata{
					"session": String(fmt.Sprintf("s%d", i%100)), "topic": String(fmt.Sprintf("topic-%d", i%50)),
					"n": Int(int64(i)), "score": Float(float64(i%1000) / 1000), "ok": Bool(i%2 == 0),
					"at": Time(time.Unix(int64(1_700_000_000+i), 0)), "tags": StringList("a", fmt.Sprintf("t%d", i%20)),
					"source": String("import"), "lang": String("en"), "owner": String(fmt.Sprintf("user-%d", i%7)),
				}})
		}
		if err := c.Upsert(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    *Filter
		want int
	}{
		{"Count/EqString", Eq("topic", String("topic-7")), n / 50},
		{"Count/RangeInt", Range("n", Int(1000), Int(1999)), 1000},
		{"Count/RangeTime", Range("at", Time(time.Unix(1_700_000_000, 0)), Time(time.Unix(1_700_000_999, 0))), 1000},
		{"Count/Tag", Eq("tags", String("t3")), n / 20},
		{"Count/Bool", Eq("ok", Bool(true)), n / 2},
		{"Count/Missing", Exists("nope"), 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				got, err := c.Count(tc.f)
				if err != nil || got != tc.want {
					b.Fatalf("Count = %d, %v; want %d", got, err, tc.want)
				}
			}
		})
	}
	b.Run("Scan/RangeInt", func(b *testing.B) {
		for b.Loop() {
			got := 0
			if err := c.Scan(Range("n", Int(5000), Int(5999)), false, func(Record) bool { got++; return true }); err != nil || got != 1000 {
				b.Fatalf("Scan = %d, %v", got, err)
			}
		}
	})
}
