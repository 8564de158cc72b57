package memory

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// wideEmbedder gives every text a pseudo-random 1024-dimensional vector (from a hash of the
// text), so that distinct chunks never merge and a long text needs more than one upsert batch.
type wideEmbedder struct{}

func (wideEmbedder) Dim() int            { return 1024 }
func (wideEmbedder) Fingerprint() string { return "test-wide-1024" }
func (wideEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		r := rand.New(rand.NewPCG(h.Sum64(), 7))
		v := make([]float32, 1024)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out, nil
}

// hookBackend is a Backend whose memory collection's upserts (counted from 1) call before,
// which may fail the call (then nothing of it is written), and after once it is written.
type hookBackend struct {
	Backend
	before  func(n int) error
	after   func(n int)
	upserts atomic.Int32
}

type hookColl struct {
	Collection
	b *hookBackend
}

func (b *hookBackend) wrap(c Collection, err error) (Collection, error) {
	if err != nil || c.Spec().Name != DefaultCollection {
		return c, err
	}
	return hookColl{c, b}, nil
}

func (b *hookBackend) Collection(ctx context.Context, name string) (Collection, error) {
	return b.wrap(b.Backend.Collection(ctx, name))
}

func (b *hookBackend) CreateCollection(ctx context.Context, spec CollectionSpec) (Collection, error) {
	return b.wrap(b.Backend.CreateCollection(ctx, spec))
}

func (c hookColl) Upsert(ctx context.Context, ms []Memory) error {
	n := int(c.b.upserts.Add(1))
	if c.b.before != nil {
		if err := c.b.before(n); err != nil {
			return err
		}
	}
	err := c.Collection.Upsert(ctx, ms)
	if err == nil && c.b.after != nil {
		c.b.after(n)
	}
	return err
}

// longText is a text of about n bytes of distinct sentences.
func longText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n-64; i++ {
		fmt.Fprintf(&b, "Fact %d: the crate numbered %d holds %d blue marbles. ", i, i*7, i%97)
		if i%8 == 7 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// TestRememberLongTextAllOrReported: a Remember whose chunks and vectors need several upsert
// batches either stores all its chunks and returns their IDs, or, when a later batch fails,
// reports the IDs the earlier batches stored (a *PartialWriteError); a context that ends while
// the batches are written does not leave some stored and unreported (issue 23: a remember that
// timed out had stored 696 of its 834 chunks, whose IDs were never returned).
func TestRememberLongTextAllOrReported(t *testing.T) {
	text := longText(DefaultMaxTextBytes - 1024)
	newStore := func(t *testing.T, before func(int) error, after func(int)) (*Store, *hookBackend) {
		t.Helper()
		b := &hookBackend{Backend: NewMemBackend(), before: before, after: after}
		s, err := New(context.Background(), b, Options{Embedder: wideEmbedder{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, b
	}
	count := func(t *testing.T, s *Store) int {
		t.Helper()
		n, err := s.Count(context.Background(), Eq(FieldSession, "alice"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("cancelled while writing", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The caller gives up (a timeout) once the first batch is durable.
		s, b := newStore(t, nil, func(int) { cancel() })
		res, err := s.Remember(ctx, "alice", text, RememberOptions{})
		if b.upserts.Load() < 2 {
			t.Fatalf("%d upserts: the text should need several batches", b.upserts.Load())
		}
		stored := count(t, s)
		var pe *PartialWriteError
		switch {
		case err == nil:
			if len(res.IDs) != stored {
				t.Fatalf("remember returned %d IDs, the session holds %d memories", len(res.IDs), stored)
			}
		case errors.As(err, &pe):
			if len(pe.Stored) != stored || stored == 0 {
				t.Fatalf("the error reports %d stored IDs, the session holds %d memories", len(pe.Stored), stored)
			}
		default:
			if stored != 0 {
				t.Fatalf("remember failed (%v) and reports nothing, but stored %d memories", err, stored)
			}
		}
	})

	t.Run("later batch fails", func(t *testing.T) {
		s, b := newStore(t, func(n int) error {
			if n == 2 {
				return fmt.Errorf("injected: %w", syscall.ENOSPC)
			}
			return nil
		}, nil)
		_, err := s.Remember(context.Background(), "alice", text, RememberOptions{})
		var pe *PartialWriteError
		if !errors.As(err, &pe) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("remember: %v, want a *PartialWriteError wrapping ENOSPC", err)
		}
		if b.upserts.Load() != 2 {
			t.Fatalf("%d upserts after the failed one", b.upserts.Load())
		}
		// The error names exactly what the session now holds: the first batch.
		got, err := s.Get(context.Background(), pe.Stored...)
		if err != nil || len(got) != len(pe.Stored) || len(got) != count(t, s) {
			t.Fatalf("reported %d stored IDs, %d of them found, the session holds %d (%v)", len(pe.Stored), len(got), count(t, s), err)
		}
		if pe.Chunks <= len(pe.Stored) {
			t.Fatalf("chunks %d, stored %d", pe.Chunks, len(pe.Stored))
		}
		if !strings.Contains(pe.Error(), fmt.Sprint(len(pe.Stored))) {
			t.Fatalf("the message does not say how many were stored: %v", pe)
		}
	})

	t.Run("cancelled before writing", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s, _ := newStore(t, nil, nil)
		if _, err := s.Remember(ctx, "alice", text, RememberOptions{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("remember with a cancelled context: %v", err)
		}
		if n := count(t, s); n != 0 {
			t.Fatalf("stored %d memories", n)
		}
	})
}
