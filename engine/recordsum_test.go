package engine

import (
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRecordSumPooled: recordSum, which encodes into pooled buffers, gives
// the checksum of the record's encoding written into a fresh buffer, for
// short and long texts (buffers past maxSumBuf are not kept), with and
// without vectors and metadata, and from many goroutines at once.
func TestRecordSumPooled(t *testing.T) {
	fresh := func(r *Record, vec []float32) uint32 {
		var e enc
		e.str(r.ID)
		e.uvarint(uint64(len(vec)))
		e.f32s(vec)
		e.str(r.Text)
		appendMeta(&e, r.Meta)
		e.u64(uint64(unixNano(r.Created)))
		e.u64(uint64(unixNano(r.Updated)))
		e.u64(uint64(unixNano(r.LastAccess)))
		e.u64(r.AccessCount)
		return crc32.Checksum(e.b, castagnoli)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	recs := mkRecords(rnd, 1024, 0, 40)
	recs[1].Text = strings.Repeat("long text ", maxSumBuf/5) // twice maxSumBuf
	recs[2].Vector, recs[2].Meta = nil, nil
	recs[3].LastAccess, recs[3].AccessCount = time.Unix(5, 0), 9
	want := make([]uint32, len(recs))
	seen := map[uint32]bool{}
	for i := range recs {
		want[i] = fresh(&recs[i], recs[i].Vector)
		seen[want[i]] = true
	}
	if len(seen) != len(recs) {
		t.Fatalf("%d distinct sums for %d records", len(seen), len(recs))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 50 {
				i := (g*7 + round) % len(recs)
				if got := recordSum(&recs[i], recs[i].Vector); got != want[i] {
					errs <- recs[i].ID
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for id := range errs {
		t.Errorf("record %s: pooled sum differs from a fresh buffer's", id)
	}
}
