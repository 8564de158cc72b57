package engine

import (
	"fmt"

	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/keyword"
)

// memtable is a collection's mutable part: records by dense node id, the
// graph over their vectors and the BM25 index over their texts. Nodes of
// overwritten or deleted records stay (dead) until the flush writes them into
// the segment's deleted set, so a flush serializes the graph as it is.
//
// Mutations happen under the DB write mutex plus the collection's write
// lock; reads hold the collection's read lock.
type memtable struct {
	idx  *hnsw.Index
	kw   *keyword.Index
	recs []memRec // by node; Vector is nil (the graph holds it)
	byID map[string]uint32
	live int
	// size estimates the bytes held, for the automatic flush threshold.
	size int64
}

type memRec struct {
	rec  Record
	dead bool
}

func newMemtable(cfg CollectionConfig, opts *Options) (*memtable, error) {
	return newMemtableSized(cfg, opts, 0)
}

// newMemtableSized is newMemtable with the graph's arrays sized for
// capacity records (a merge knows how many it inserts): a graph grown by
// doubling holds its old arrays and the new ones at once, 1.5 times the
// final size, and leaves the old ones to the collector.
func newMemtableSized(cfg CollectionConfig, opts *Options, capacity int) (*memtable, error) {
	idx, err := hnsw.New(hnsw.Config{Dim: cfg.Dim, Metric: cfg.Metric, M: opts.M, EfConstruction: opts.EfConstruction, Capacity: capacity})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return &memtable{idx: idx, kw: keyword.NewIndex(), byID: map[string]uint32{}}, nil
}

// newMemtableFrom returns a memtable whose graph starts as a copy of seg's
// (hnsw.FromView: verified whole, refused with tombstones), with room for
// capacity nodes. The caller adopts seg's records in node order before it
// inserts any other.
func newMemtableFrom(cfg CollectionConfig, opts *Options, seg *segment, capacity int) (*memtable, error) {
	idx, err := hnsw.FromView(seg.view, hnsw.Config{Dim: cfg.Dim, Metric: cfg.Metric, M: opts.M, EfConstruction: opts.EfConstruction, Capacity: capacity})
	if err != nil {
		return nil, err
	}
	return &memtable{idx: idx, kw: keyword.NewIndex(), byID: map[string]uint32{}}, nil
}

// adopt adds r as node, whose vector the graph already holds (a memtable
// from newMemtableFrom).
func (m *memtable) adopt(r Record, node uint32) error {
	if int(node) != len(m.recs) || int(node) >= m.idx.Len() {
		return fmt.Errorf("engine: adopting node %d as record %d of a graph of %d", node, len(m.recs), m.idx.Len())
	}
	if err := m.kw.Add(node, r.Text); err != nil {
		return fmt.Errorf("engine: keyword insert %q: %w", r.ID, err)
	}
	m.size += int64(len(r.Text)+len(r.ID)+4*len(r.Vector)) + 256
	r.Vector = nil
	m.recs = append(m.recs, memRec{rec: r})
	m.byID[r.ID] = node
	m.live++
	return nil
}

// insertBatch adds recs (validated; each Vector the stored form) as new
// nodes in order, linking them from up to workers goroutines
// (hnsw.InsertBatch).
func (m *memtable) insertBatch(recs []Record, workers int) error {
	vecs := make([][]float32, len(recs))
	for i := range recs {
		vecs[i] = recs[i].Vector
	}
	ids, err := m.idx.InsertBatch(vecs, workers)
	if err != nil {
		return fmt.Errorf("engine: index insert: %w", err)
	}
	for i, id := range ids {
		if err := m.adopt(recs[i], id); err != nil {
			return err
		}
	}
	return nil
}

// permute renumbers m's nodes: node i becomes the node order[i] was, in the
// graph, the keyword index and the records alike.
func (m *memtable) permute(order []uint32) error {
	if len(order) != len(m.recs) {
		return fmt.Errorf("engine: an order of %d for %d records", len(order), len(m.recs))
	}
	if err := m.idx.Permute(order); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	newNode := make([]uint32, len(order))
	recs := make([]memRec, len(m.recs))
	for i, old := range order {
		newNode[old] = uint32(i)
		recs[i] = m.recs[old]
	}
	if err := m.kw.Renumber(newNode); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	m.recs = recs
	for i := range m.recs {
		if !m.recs[i].dead {
			m.byID[m.recs[i].rec.ID] = uint32(i)
		}
	}
	return nil
}

// insert adds r (already validated; vec is the stored form) as a new node.
func (m *memtable) insert(r Record, vec []float32) error {
	node, err := m.idx.Insert(vec)
	if err != nil {
		return fmt.Errorf("engine: index insert %q: %w", r.ID, err)
	}
	if int(node) != len(m.recs) {
		return fmt.Errorf("engine: index assigned node %d, expected %d", node, len(m.recs))
	}
	if err := m.kw.Add(node, r.Text); err != nil {
		return fmt.Errorf("engine: keyword insert %q: %w", r.ID, err)
	}
	r.Vector = nil
	m.recs = append(m.recs, memRec{rec: r})
	m.byID[r.ID] = node
	m.live++
	m.size += int64(len(r.Text)+len(r.ID)+4*len(vec)) + 256
	return nil
}

// remove marks id's node dead; it reports whether id was live here.
func (m *memtable) remove(id string) bool {
	node, ok := m.byID[id]
	if !ok {
		return false
	}
	delete(m.byID, id)
	m.recs[node].dead = true
	m.live--
	_ = m.idx.Delete(node) // cannot fail: node exists and was live
	return true
}

func (m *memtable) get(id string) (*memRec, uint32, bool) {
	node, ok := m.byID[id]
	if !ok {
		return nil, 0, false
	}
	return &m.recs[node], node, true
}

// record returns a copy of node's record, with the vector and the text
// when asked.
func (m *memtable) record(node uint32, withVec, withText bool) Record {
	r := m.recs[node].rec.Clone()
	if withVec {
		r.Vector = m.idx.Vector(node)
	}
	if !withText {
		r.Text = ""
	}
	return r
}

func (m *memtable) getter(node uint32) getter {
	meta := m.recs[node].rec.Meta
	return func(field string) (Value, bool) {
		v, ok := meta[field]
		return v, ok
	}
}
