package memory_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/memorytest"
)

// failingBackend hands out collections whose vector or keyword search fails
// once fail is set, so recall's two sides can be broken one at a time.
type failingBackend struct {
	memory.Backend
	fail *string // "vector", "keyword" or ""
}

func (b failingBackend) Collection(ctx context.Context, name string) (memory.Collection, error) {
	c, err := b.Backend.Collection(ctx, name)
	return failingColl{c, b.fail}, err
}

func (b failingBackend) CreateCollection(ctx context.Context, spec memory.CollectionSpec) (memory.Collection, error) {
	c, err := b.Backend.CreateCollection(ctx, spec)
	return failingColl{c, b.fail}, err
}

type failingColl struct {
	memory.Collection
	fail *string
}

var errSide = errors.New("side broken on purpose")

func (c failingColl) SearchVector(ctx context.Context, v []float32, k int, f *memory.Filter) ([]memory.Hit, error) {
	if *c.fail == "vector" {
		return nil, errSide
	}
	return c.Collection.SearchVector(ctx, v, k, f)
}

func (c failingColl) SearchText(ctx context.Context, q string, k int, f *memory.Filter) ([]memory.Hit, error) {
	if *c.fail == "keyword" {
		return nil, errSide
	}
	return c.Collection.SearchText(ctx, q, k, f)
}

// TestRecallSides: a hybrid recall runs its keyword side beside the vector
// side when a second core is free; with one core or two, a failing side is
// the recall's error (named), and with neither failing the results are the
// same.
func TestRecallSides(t *testing.T) {
	var fail string
	s, _ := memorytest.NewStore(t, failingBackend{memory.NewMemBackend(), &fail}, memory.Options{
		Embedder: memorytest.NewHashEmbedder(64, "h"), DedupThreshold: -1})
	ctx := context.Background()
	for _, text := range []string{"Ran the marathon in Porto", "Porto wine at the wedding", "A dentist appointment on Tuesday"} {
		if _, err := s.Remember(ctx, "u", text, memory.RememberOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var first []string
	for _, procs := range []int{1, 2} {
		prev := runtime.GOMAXPROCS(procs)
		t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
		fail = ""
		res, err := s.Recall(ctx, "marathon in Porto", memory.RecallOptions{Session: "u", K: 3})
		if err != nil || len(res) == 0 {
			t.Fatalf("GOMAXPROCS %d: %v, %d results", procs, err, len(res))
		}
		var ids []string
		for _, r := range res {
			ids = append(ids, r.Memory.ID)
		}
		if first == nil {
			first = ids
		} else if strings.Join(ids, ",") != strings.Join(first, ",") {
			t.Fatalf("GOMAXPROCS %d: %v, with one core %v", procs, ids, first)
		}
		for _, side := range []string{"vector", "keyword"} {
			fail = side
			_, err := s.Recall(ctx, "marathon in Porto", memory.RecallOptions{Session: "u", K: 3})
			if !errors.Is(err, errSide) || !strings.Contains(err.Error(), side+" search") {
				t.Fatalf("GOMAXPROCS %d, %s side failing: %v", procs, side, err)
			}
		}
	}
}
