package hnsw

import "fmt"

// FromView returns a mutable Index holding a copy of v's graph: the same
// ids, links, levels, codes, vectors, entry point and quantizer, ready for
// more inserts. Merging segments starts from the largest one's graph this
// way instead of inserting all its vectors again, which is most of a
// merge's work. v is verified whole first (Verify: checksums and every
// link), so damaged bytes never enter a mutable index. A View with
// tombstones is refused: a merge drops deleted nodes, so it rebuilds.
//
// cfg must have v's dimension, metric and M; its Quantizer is replaced by
// v's (the copied codes were encoded with it), and Capacity, when larger
// than v's size, reserves room for the inserts to come.
func FromView(v *View, cfg Config) (*Index, error) {
	if v.deleted > 0 {
		return nil, fmt.Errorf("%w: the view holds %d tombstones", ErrBadArgument, v.deleted)
	}
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if c.Dim != v.g.dim || c.Metric != v.g.metric || c.M != v.g.m {
		return nil, fmt.Errorf("%w: config dim %d, %v, M %d for a view of dim %d, %v, M %d", ErrBadArgument, c.Dim, c.Metric, c.M, v.g.dim, v.g.metric, v.g.m)
	}
	if err := v.Verify(); err != nil {
		return nil, err
	}
	q := v.g.quant
	c.Quantizer = &q
	ix, err := New(c)
	if err != nil {
		return nil, err
	}
	g, src := &ix.g, &v.g
	ix.growLocked(v.n, len(src.upper))
	copy(g.codes, src.codes)
	copy(g.vectors, src.vectors)
	copy(g.level0, src.level0)
	copy(g.levels, src.levels)
	copy(g.upperOff, src.upperOff)
	copy(g.upper, src.upper)
	copy(g.flags, src.flags)
	ix.upperUsed = len(src.upper)
	ix.n.Store(uint32(v.n))
	if !v.empty {
		ix.ep.Store(packEP(v.ep, v.top))
	}
	return ix, nil
}
