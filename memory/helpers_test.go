package memory

import (
	"context"
	"errors"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/engramdb/engram/engine"
)

// hashEmbedder is a deterministic bag-of-words embedder for tests: each lowercased word (each
// CJK character) adds ±1 to one of dim hashed dimensions.
type hashEmbedder struct {
	dim   int
	fp    string
	calls atomic.Int64
	// failAfter, when positive, makes every call after that many fail.
	failAfter int64
}

func newHashEmbedder(dim int, fp string) *hashEmbedder { return &hashEmbedder{dim: dim, fp: fp} }

func (h *hashEmbedder) Dim() int            { return h.dim }
func (h *hashEmbedder) Fingerprint() string { return h.fp }

var errEmbedFailed = errors.New("embedder failed on purpose")

func (h *hashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n := h.calls.Add(1); h.failAfter > 0 && n > h.failAfter {
		return nil, errEmbedFailed
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, h.dim)
		for _, w := range words(t) {
			f := fnv.New64a()
			f.Write([]byte(h.fp))
			f.Write([]byte(w))
			x := f.Sum64()
			sign := float32(1)
			if x>>63 == 1 {
				sign = -1
			}
			v[x%uint64(h.dim)] += sign
		}
		out[i] = v
	}
	return out, nil
}

func words(t string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for _, r := range strings.ToLower(t) {
		switch {
		case unicode.Is(unicode.Han, r):
			flush()
			out = append(out, string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// fakeClock is an injectable clock; tests move it, nobody sleeps.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const day = 24 * time.Hour

// newTestStore returns a store over an in-memory backend with a hash embedder and a fake clock.
func newTestStore(t testing.TB, opts Options) (*Store, *fakeClock) {
	t.Helper()
	return newTestStoreOn(t, NewMemBackend(), opts)
}

func newTestStoreOn(t testing.TB, b Backend, opts Options) (*Store, *fakeClock) {
	t.Helper()
	clk := newClock()
	if opts.Embedder == nil {
		opts.Embedder = newHashEmbedder(256, "hash-256")
	}
	if opts.Clock == nil {
		opts.Clock = clk.Now
	}
	s, err := New(context.Background(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

func mustRemember(t testing.TB, s *Store, session, text string, o RememberOptions) RememberResult {
	t.Helper()
	r, err := s.Remember(context.Background(), session, text, o)
	if err != nil {
		t.Fatalf("Remember(%q, %q): %v", session, text, err)
	}
	return r
}

func texts(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Text
	}
	return out
}

type backendMaker func(t testing.TB) Backend

func newEngineTestBackend(t testing.TB) Backend {
	db, err := engine.Open(t.TempDir(), engine.Options{UnsafeNoSync: true, CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	b := NewEngineBackend(db)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// eachBackend runs a test against the in-memory and the engine backend.
func eachBackend(t *testing.T, fn func(t *testing.T, mk backendMaker)) {
	t.Run("mem", func(t *testing.T) { fn(t, func(testing.TB) Backend { return NewMemBackend() }) })
	t.Run("engine", func(t *testing.T) { fn(t, newEngineTestBackend) })
}
