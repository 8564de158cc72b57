package memory

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/engramdb/engram/keyword"
	"github.com/engramdb/engram/quant"
)

// NewMemBackend returns a Backend that keeps everything in process memory: exact vector search,
// BM25 through package keyword, nothing durable. It serves tests and ephemeral stores; it is also
// the reference the engine backend is tested against.
//
// Overwritten and deleted memories leave an empty slot behind (keyword document numbers are
// never reused), so the slot table grows with the number of writes, not of live memories.
func NewMemBackend() Backend {
	return &memBackend{colls: map[string]*memCollection{}, kv: &memKV{m: map[string][]byte{}}}
}

type memBackend struct {
	mu    sync.Mutex
	colls map[string]*memCollection
	kv    *memKV
}

func (b *memBackend) Collection(_ context.Context, name string) (Collection, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.colls[name]
	if !ok {
		return nil, errorf(ErrNoCollection, "%q", name)
	}
	return c, nil
}

func (b *memBackend) CreateCollection(_ context.Context, spec CollectionSpec) (Collection, error) {
	if spec.Name == "" || spec.Dim < 1 {
		return nil, errorf(ErrInvalidInput, "collection needs a name and a positive dimension, got %q dim %d", spec.Name, spec.Dim)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.colls[spec.Name]; ok {
		return nil, errorf(ErrInvalidInput, "collection %q exists", spec.Name)
	}
	c := &memCollection{spec: spec, byID: map[string]uint32{}, kw: keyword.NewIndex()}
	b.colls[spec.Name] = c
	return c, nil
}

func (b *memBackend) DropCollection(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.colls, name)
	return nil
}

func (b *memBackend) KV() KV       { return b.kv }
func (b *memBackend) Close() error { return nil }

type memCollection struct {
	spec CollectionSpec
	mu   sync.RWMutex
	byID map[string]uint32
	// docs is indexed by keyword document number; nil marks an overwritten or deleted slot.
	docs  []*Memory
	norms []float32
	kw    *keyword.Index
}

func (c *memCollection) Spec() CollectionSpec { return c.spec }

func (c *memCollection) Upsert(ctx context.Context, ms []Memory) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validateBatch(ms, c.spec.Dim); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range ms {
		m := ms[i].clone()
		if old, ok := c.byID[m.ID]; ok {
			c.removeNoLock(old)
		}
		slot := uint32(len(c.docs))
		if err := c.kw.Add(slot, keywordText(&m)); err != nil {
			return err // cannot happen: slots are fresh
		}
		c.byID[m.ID] = slot
		c.docs = append(c.docs, &m)
		c.norms = append(c.norms, float32(math.Sqrt(float64(quant.DotFloat32(m.Vector, m.Vector)))))
	}
	return nil
}

// removeNoLock empties a slot; the caller holds c.mu.
func (c *memCollection) removeNoLock(slot uint32) {
	_, _ = c.kw.Remove(slot, keywordText(c.docs[slot])) // the text is the one indexed: cannot fail
	c.docs[slot] = nil
}

// validateBatch checks a batch before anything is written, so a bad batch changes nothing.
func validateBatch(ms []Memory, dim int) error {
	seen := make(map[string]bool, len(ms))
	for i := range ms {
		m := &ms[i]
		if m.ID == "" || seen[m.ID] {
			return errorf(ErrInvalidInput, "memory %d: empty or repeated ID %q", i, m.ID)
		}
		seen[m.ID] = true
		if len(m.Vector) != dim {
			return errorf(ErrInvalidInput, "memory %q: vector has %d dimensions, the collection %d", m.ID, len(m.Vector), dim)
		}
		for _, x := range m.Vector {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return errorf(ErrInvalidInput, "memory %q: vector holds NaN or Inf", m.ID)
			}
		}
	}
	return nil
}

func (c *memCollection) Get(ctx context.Context, ids []string) ([]Memory, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Memory, 0, len(ids))
	for _, id := range ids {
		if slot, ok := c.byID[id]; ok {
			out = append(out, c.docs[slot].clone())
		}
	}
	return out, nil
}

func (c *memCollection) Delete(ctx context.Context, ids []string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, id := range ids {
		if slot, ok := c.byID[id]; ok {
			c.removeNoLock(slot)
			delete(c.byID, id)
			n++
		}
	}
	return n, nil
}

func (c *memCollection) DeleteWhere(ctx context.Context, f *Filter) (int, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	var ids []string
	err := c.Scan(ctx, f, func(m Memory) error { ids = append(ids, m.ID); return nil })
	if err != nil {
		return 0, err
	}
	return c.Delete(ctx, ids)
}

func (c *memCollection) SearchVector(ctx context.Context, v []float32, k int, f *Filter) ([]Hit, error) {
	if err := checkSearch(ctx, k, f); err != nil {
		return nil, err
	}
	if len(v) != c.spec.Dim {
		return nil, errorf(ErrInvalidInput, "query vector has %d dimensions, the collection %d", len(v), c.spec.Dim)
	}
	qn := math.Sqrt(float64(quant.DotFloat32(v, v)))
	c.mu.RLock()
	defer c.mu.RUnlock()
	var hits []Hit
	for slot, m := range c.docs {
		if m == nil || !f.Match(m) {
			continue
		}
		s := 0.0
		if d := qn * float64(c.norms[slot]); d > 0 {
			s = float64(quant.DotFloat32(v, m.Vector)) / d
		}
		hits = append(hits, Hit{Memory: *m, Score: s})
	}
	return topHits(hits, k), nil
}

func (c *memCollection) SearchText(ctx context.Context, query string, k int, f *Filter) ([]Hit, error) {
	if err := checkSearch(ctx, k, f); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	kh, err := c.kw.Search(query, k, func(doc uint32) bool {
		m := c.docs[doc]
		return m != nil && f.Match(m)
	})
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, len(kh))
	for i, h := range kh {
		hits[i] = Hit{Memory: *c.docs[h.Doc], Score: h.Score}
	}
	return stripVectors(hits), nil
}

func checkSearch(ctx context.Context, k int, f *Filter) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if k < 1 {
		return errorf(ErrInvalidInput, "k = %d, must be at least 1", k)
	}
	return f.Validate()
}

// topHits sorts hits best first (ties by ID, so results are deterministic), keeps k and drops
// the vectors and shared tag slices.
func topHits(hits []Hit, k int) []Hit {
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Memory.ID, b.Memory.ID)
	})
	return stripVectors(hits[:min(k, len(hits))])
}

func stripVectors(hits []Hit) []Hit {
	for i := range hits {
		hits[i].Memory.Vector = nil
		hits[i].Memory.Tags = slices.Clone(hits[i].Memory.Tags)
	}
	return hits
}

func (c *memCollection) Touch(ctx context.Context, ids []string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if slot, ok := c.byID[id]; ok {
			m := c.docs[slot]
			m.AccessCount++
			m.LastAccess = at
		}
	}
	return nil
}

func (c *memCollection) Scan(ctx context.Context, f *Filter, fn func(Memory) error) error {
	if err := f.Validate(); err != nil {
		return err
	}
	// Snapshot under the lock, call fn without it.
	c.mu.RLock()
	var ms []Memory
	for _, m := range c.docs {
		if m != nil && f.Match(m) {
			ms = append(ms, m.clone())
		}
	}
	c.mu.RUnlock()
	for _, m := range ms {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

func (c *memCollection) Count(ctx context.Context, f *Filter) (int, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, m := range c.docs {
		if m != nil && f.Match(m) {
			n++
		}
	}
	return n, nil
}

type memKV struct {
	mu sync.RWMutex
	m  map[string][]byte
}

func (kv *memKV) Get(key string) ([]byte, bool, error) {
	kv.mu.RLock()
	defer kv.mu.RUnlock()
	v, ok := kv.m[key]
	return slices.Clone(v), ok, nil
}

func (kv *memKV) Put(key string, value []byte) error {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	kv.m[key] = slices.Clone(value)
	return nil
}

func (kv *memKV) Delete(key string) error {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	delete(kv.m, key)
	return nil
}

func (kv *memKV) Scan(prefix string, fn func(key string, value []byte) error) error {
	kv.mu.RLock()
	var keys []string
	for k := range kv.m {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = slices.Clone(kv.m[k])
	}
	kv.mu.RUnlock()
	for i, k := range keys {
		if err := fn(k, vals[i]); err != nil {
			return err
		}
	}
	return nil
}
