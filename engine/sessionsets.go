package engine

import (
	"sync"

	"github.com/engramdb/engram/hnsw"
)

// sessionSets caches, per segment, the live nodes of recently searched
// namespace values (sessions). A hybrid recall filters its vector side and
// its BM25 side by the same session at once, and a conversation recalls
// from the same session again and again; without the cache every side of
// every recall rebuilt the set from the namespace postings (a pass over
// the session's nodes, and a bitset over the whole segment). An entry
// holds for one deletion count: deletes only ever add marks, so an equal
// count means the same deleted nodes.
type sessionSets struct {
	mu     sync.Mutex
	m      map[string]*sessionSet
	byBits map[*hnsw.Bitset]*sessionSet // the built ones, for cachedIDs
}

// sessionSetBytes bounds the bitsets one segment keeps: 1 MiB, at least
// four entries (a bitset is a bit per node of the segment); 0 turns the
// cache off. A variable for tests and benchmarks.
var sessionSetBytes = 1 << 20

// sessionSet is one namespace value's live nodes in a segment, built on
// first use and shared, read-only, by every search that uses it.
type sessionSet struct {
	ndel    int
	once    sync.Once
	bits    *hnsw.Bitset
	idsOnce sync.Once
	ids     []uint32
}

// sessionSet returns the set of the live nodes among nodes (the postings
// of namespace value v). The caller holds the collection's read lock, so
// deletions do not change while it runs.
func (s *segment) sessionSet(v string, nodes []uint32) *sessionSet {
	c := &s.sets
	c.mu.Lock()
	e := c.m[v]
	if e == nil || e.ndel != s.ndel {
		if c.m == nil {
			c.m = make(map[string]*sessionSet)
		}
		if len(c.m) >= max(4, sessionSetBytes/max(1, s.n/8)) {
			for k, old := range c.m { // drop one, whichever the map gives
				delete(c.m, k)
				delete(c.byBits, old.bits)
				break
			}
		}
		if old := c.m[v]; old != nil {
			delete(c.byBits, old.bits)
		}
		e = &sessionSet{ndel: s.ndel}
		c.m[v] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		bs := hnsw.NewBitset(s.n)
		for _, node := range nodes {
			if !s.isDeleted(node) {
				_ = bs.Set(node)
			}
		}
		e.bits = bs
		c.mu.Lock()
		if c.m[v] == e { // not evicted or replaced meanwhile
			if c.byBits == nil {
				c.byBits = make(map[*hnsw.Bitset]*sessionSet)
			}
			c.byBits[bs] = e
		}
		c.mu.Unlock()
	})
	return e
}

// idList returns the set's nodes in increasing order, listed once.
func (e *sessionSet) idList() []uint32 {
	e.idsOnce.Do(func() { e.ids = e.bits.AppendIDs(make([]uint32, 0, e.bits.Count())) })
	return e.ids
}

// cachedIDs returns the node list of bs when bs is a cached session set
// of the segment, else nil.
func (s *segment) cachedIDs(bs *hnsw.Bitset) []uint32 {
	c := &s.sets
	c.mu.Lock()
	hit := c.byBits[bs]
	c.mu.Unlock()
	if hit == nil {
		return nil
	}
	return hit.idList()
}
