package memorytest

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/engramdb/engram/memory"
)

var ctx = context.Background()

const day = 24 * time.Hour

// HashEmbedder is a deterministic bag-of-words embedder for tests: each lowercased word (each
// Han character) adds ±1 to one of Dim hashed dimensions. Identical word bags embed identically;
// texts without a shared word are nearly orthogonal.
type HashEmbedder struct {
	dim   int
	fp    string
	calls atomic.Int64
	// FailAfter, when positive, makes every Embed call after that many fail with ErrEmbedFailed.
	FailAfter int64
}

// NewHashEmbedder returns a HashEmbedder of dim dimensions whose fingerprint is fp (and whose
// hashing is seeded by it, so two fingerprints give different vectors).
func NewHashEmbedder(dim int, fp string) *HashEmbedder { return &HashEmbedder{dim: dim, fp: fp} }

// Dim implements memory.Embedder.
func (h *HashEmbedder) Dim() int { return h.dim }

// Fingerprint implements memory.Embedder.
func (h *HashEmbedder) Fingerprint() string { return h.fp }

// Calls returns how many times Embed was called.
func (h *HashEmbedder) Calls() int64 { return h.calls.Load() }

// ErrEmbedFailed is what a HashEmbedder returns past FailAfter calls.
var ErrEmbedFailed = errors.New("memorytest: embedder failed on purpose")

// Embed implements memory.Embedder.
func (h *HashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n := h.calls.Add(1); h.FailAfter > 0 && n > h.FailAfter {
		return nil, ErrEmbedFailed
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

// Clock is an injectable clock; tests move it, nobody sleeps. It starts at 2026-06-01 12:00 UTC.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock at its start time.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)} }

// Now returns the clock's time (for memory.Options.Clock).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// NewStore returns a Store over b with a 256-d HashEmbedder and a Clock unless opts sets them.
func NewStore(t testing.TB, b memory.Backend, opts memory.Options) (*memory.Store, *Clock) {
	t.Helper()
	clk := NewClock()
	if opts.Embedder == nil {
		opts.Embedder = NewHashEmbedder(256, "hash-256")
	}
	if opts.Clock == nil {
		opts.Clock = clk.Now
	}
	s, err := memory.New(context.Background(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

// Remember calls s.Remember and fails the test on error.
func Remember(t testing.TB, s *memory.Store, session, text string, o memory.RememberOptions) memory.RememberResult {
	t.Helper()
	r, err := s.Remember(context.Background(), session, text, o)
	if err != nil {
		t.Fatalf("Remember(%q, %q): %v", session, text, err)
	}
	return r
}

// Texts returns the texts of results, in order.
func Texts(rs []memory.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Text
	}
	return out
}

// All returns every memory of s, vectors included.
func All(t testing.TB, s *memory.Store) []memory.Memory {
	t.Helper()
	var ms []memory.Memory
	if err := s.Scan(context.Background(), nil, func(m memory.Memory) error { ms = append(ms, m); return nil }); err != nil {
		t.Fatal(err)
	}
	return ms
}

// Canonical renders memories sorted by ID as JSON lines, times in UTC, vectors exactly: two
// sets of memories are identical when their Canonical forms are equal.
func Canonical(t testing.TB, ms []memory.Memory) []byte {
	t.Helper()
	ms = slices.Clone(ms)
	slices.SortFunc(ms, func(a, b memory.Memory) int { return strings.Compare(a.ID, b.ID) })
	var out []byte
	for _, m := range ms {
		m.Created, m.Updated, m.LastAccess = m.Created.UTC(), m.Updated.UTC(), m.LastAccess.UTC()
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, line...), '\n')
	}
	return out
}

func equalMemories(t testing.TB, a, b []memory.Memory) bool {
	return string(Canonical(t, a)) == string(Canonical(t, b))
}

// ErrInjected is the error a FailingBackend returns.
var ErrInjected = errors.New("memorytest: injected failure")

// FailingBackend wraps a backend and fails collection writes on demand, as a crash at that
// point would leave them.
type FailingBackend struct {
	memory.Backend
	FailDelete, FailUpsert bool
}

type failingColl struct {
	memory.Collection
	b *FailingBackend
}

// Collection implements memory.Backend.
func (f *FailingBackend) Collection(ctx context.Context, name string) (memory.Collection, error) {
	c, err := f.Backend.Collection(ctx, name)
	if err != nil {
		return nil, err
	}
	return failingColl{c, f}, nil
}

// CreateCollection implements memory.Backend.
func (f *FailingBackend) CreateCollection(ctx context.Context, spec memory.CollectionSpec) (memory.Collection, error) {
	c, err := f.Backend.CreateCollection(ctx, spec)
	if err != nil {
		return nil, err
	}
	return failingColl{c, f}, nil
}

func (c failingColl) Delete(ctx context.Context, ids []string) (int, error) {
	if c.b.FailDelete {
		return 0, ErrInjected
	}
	return c.Collection.Delete(ctx, ids)
}

func (c failingColl) Upsert(ctx context.Context, ms []memory.Memory) error {
	if c.b.FailUpsert {
		return ErrInjected
	}
	return c.Collection.Upsert(ctx, ms)
}
