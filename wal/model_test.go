package wal

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/engramdb/engram/internal/vfs"
)

// TestModel runs random sequences of appends, reopens, power losses,
// truncations and replays against a slice of the records that must be in
// the log, comparing after every step that reads.
func TestModel(t *testing.T) {
	steps := 500
	if testing.Short() {
		steps = 150
	}
	modes := []SyncMode{Always, Always, Interval(time.Hour), UnsafeNoSync}
	for seed := uint64(0); seed < 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		mem := vfs.NewMem()
		mode := modes[seed%4]
		opts := Options{FS: mem, SegmentSize: MinSegmentSize * int64(1+rng.IntN(2)), NoCompression: seed%2 == 1, Sync: mode}
		l := mustOpen(t, "/wal", opts)
		var model []rec
		for step := 0; step < steps; step++ {
			switch op := rng.IntN(100); {
			case op < 60:
				n := rng.IntN(300)
				if rng.IntN(8) == 0 {
					n = rng.IntN(60000)
				}
				model = appendAll(t, l, model, payload(int(seed)*100000+step, n))
			case op < 65:
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = mustOpen(t, "/wal", opts)
			case op < 70: // power loss: every acknowledged append must survive
				if mode != Always {
					// In the weaker modes, only what Sync covered.
					if err := l.Sync(); err != nil {
						t.Fatal(err)
					}
				}
				crashed := mem.Crash()
				l.Close()
				mem, opts.FS = crashed, crashed
				l = mustOpen(t, "/wal", opts)
				checkRecs(t, replayAll(t, l, 0), model)
			case op < 75 && len(model) > 0:
				cut := model[rng.IntN(len(model))].lsn
				if err := l.TruncateBefore(cut); err != nil {
					t.Fatal(err)
				}
				names, err := mem.ReadDir("/wal")
				if err != nil {
					t.Fatal(err)
				}
				first, _ := parseSegmentName(names[0])
				if first > cut.Segment() {
					t.Fatalf("TruncateBefore(%v) deleted segment %d", cut, first-1)
				}
				k := sort.Search(len(model), func(i int) bool { return model[i].lsn.Segment() >= first })
				model = model[k:]
			case op < 90:
				var from LSN
				if len(model) > 0 && rng.IntN(4) > 0 {
					i := rng.IntN(len(model))
					from = model[i].lsn + LSN(rng.IntN(2))
				}
				k := sort.Search(len(model), func(i int) bool { return model[i].lsn >= from })
				checkRecs(t, replayAll(t, l, from), model[k:])
			default:
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
			}
		}
		checkRecs(t, replayAll(t, l, 0), model)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
