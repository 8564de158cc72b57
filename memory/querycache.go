package memory

import (
	"container/list"
	"context"
	"fmt"
	"sync"
)

// DefaultQueryCache is how many query embeddings a Store keeps (Options.QueryCache): 1024
// vectors of 1024 dimensions are 4 MiB.
const DefaultQueryCache = 1024

// queryCache is a bounded LRU of query embeddings keyed by the embedder's fingerprint and the
// query text, so a repeated Recall skips the embedder (tens to hundreds of milliseconds with an
// ONNX model) and a model switch (Reembed) never serves a vector of the old model.
type queryCache struct {
	mu    sync.Mutex
	max   int
	ll    *list.List // front: most recently used *queryEntry
	items map[queryKey]*list.Element
}

type queryKey struct{ fingerprint, text string }

type queryEntry struct {
	key queryKey
	vec []float32
}

func newQueryCache(max int) *queryCache {
	if max <= 0 {
		return nil
	}
	return &queryCache{max: max, ll: list.New(), items: map[queryKey]*list.Element{}}
}

// get returns a copy of the cached vector (callers may keep or change it) and whether there was one.
func (c *queryCache) get(k queryKey) ([]float32, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(el)
	return append([]float32(nil), el.Value.(*queryEntry).vec...), true
}

func (c *queryCache) put(k queryKey, vec []float32) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.ll.MoveToFront(el)
		return
	}
	c.items[k] = c.ll.PushFront(&queryEntry{key: k, vec: append([]float32(nil), vec...)})
	for c.ll.Len() > c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.items, old.Value.(*queryEntry).key)
	}
}

// embedQuery embeds one query through the cache.
func (s *Store) embedQuery(ctx context.Context, emb Embedder, query string) ([]float32, error) {
	k := queryKey{emb.Fingerprint(), query}
	if v, ok := s.qcache.get(k); ok {
		return v, nil
	}
	if qe, ok := emb.(QueryEmbedder); ok {
		v, err := qe.EmbedQuery(ctx, query)
		if err != nil {
			return nil, fmt.Errorf("memory: embedding the query: %w", err)
		}
		if err := normalize(v, emb.Dim()); err != nil {
			return nil, err
		}
		s.qcache.put(k, v)
		return v, nil
	}
	vs, err := s.embed(ctx, emb, []string{query})
	if err != nil {
		return nil, err
	}
	s.qcache.put(k, vs[0])
	return vs[0], nil
}

// QueryEmbedder is an optional Embedder capability: EmbedQuery embeds a recall query, where an
// embedder reads queries differently from memories (the lexical embedder drops question words,
// as the keyword index does). Recall uses it when the embedder has it.
type QueryEmbedder interface {
	EmbedQuery(ctx context.Context, query string) ([]float32, error)
}
