package hnsw

// Checked reads of a View: a caller that verifies the layout's bytes in
// pieces (the engine keeps a checksum per chunk of its segment files) sets
// a ReadVerifier, and every search then records what it read and has the
// verifier check those bytes before it answers. A search over damaged
// bytes may take a wrong path, but everything that decided its answer was
// read, and so is checked: a search answers from verified bytes or returns
// the verifier's error.

// ReadVerifier checks bytes [off, off+n) of the layout a View was opened on
// (offsets from its first byte) and returns nil when they are intact. It
// is called from concurrent searches, often for bytes it checked before
// (it should remember what it verified), and must be safe for that.
type ReadVerifier func(off, n uint64) error

// SetVectorReader makes rescoring read each candidate's vector with fn
// instead of through the View's bytes: fn copies the 4·dim bytes at
// offset off of the layout (from the View's first byte) into dst, checked
// as the caller sees fit, and returns an error for bytes it cannot read or
// trust (the search then returns it). The engine reads segment vectors
// with pread this way, so that rescoring's scattered 4 KiB reads do not
// map the vectors section into the process (a page fault maps a whole
// folio of the page cache, up to megabytes, not the bytes used) and
// resident memory stays near the codes and the graph. Vector,
// CheckedVector and the exact scan of the engine still use the bytes. fn
// is called from concurrent searches. Call it before the View is shared.
func (v *View) SetVectorReader(fn func(off uint64, dst []byte) error) {
	v.g.readVec, v.g.vecOff = fn, v.offs[secVectors]
}

// SetReadVerifier makes every later Search and CheckedVector check the
// bytes it read with fn before answering (nil: no checks). Call it before
// the View is shared between goroutines.
func (v *View) SetReadVerifier(fn ReadVerifier) { v.verify = fn }

// CheckedVector is Vector after the verifier (if any) checked the vector's
// bytes; an error from the verifier is returned instead of the vector.
func (v *View) CheckedVector(id uint32) ([]float32, error) {
	if int64(id) >= int64(v.n) {
		return nil, nil
	}
	if v.verify != nil {
		d := uint64(v.g.dim)
		if err := v.verify(v.offs[secVectors]+4*d*uint64(id), 4*d); err != nil {
			return nil, err
		}
	}
	return v.g.vector(id), nil
}

// upperRead is a read of node's list on an upper level (its level byte,
// its upper offset and the list).
type upperRead struct {
	node  uint32
	level int
}

// trace lists the nodes whose parts of the layout one search read. Ids
// are those the search used, so they may be out of range where the bytes
// that named them were damaged; verifyTrace skips those (the bytes that
// named them are in the trace too, and fail their check).
type trace struct {
	codes, vectors, lists0, flags []uint32
	upper                         []upperRead
}

func (t *trace) reset() {
	t.codes, t.vectors, t.lists0, t.flags, t.upper = t.codes[:0], t.vectors[:0], t.lists0[:0], t.flags[:0], t.upper[:0]
}

// verifyTrace checks every byte range t records.
func (v *View) verifyTrace(t *trace) error {
	g := &v.g
	n := uint64(v.n)
	each := func(ids []uint32, sec int, size uint64) error {
		for _, id := range ids {
			if uint64(id) >= n {
				continue
			}
			if err := v.verify(v.offs[sec]+size*uint64(id), size); err != nil {
				return err
			}
		}
		return nil
	}
	d := uint64(g.dim)
	if err := each(t.codes, secCodes, d); err != nil {
		return err
	}
	if err := each(t.vectors, secVectors, 4*d); err != nil {
		return err
	}
	if err := each(t.lists0, secLevel0, 4*uint64(g.stride0())); err != nil {
		return err
	}
	if err := each(t.flags, secFlags, 4); err != nil {
		return err
	}
	stride := 4 * uint64(g.m+1)
	for _, r := range t.upper {
		if uint64(r.node) >= n {
			continue
		}
		if err := v.verify(v.offs[secLevels]+uint64(r.node), 1); err != nil {
			return err
		}
		if err := v.verify(v.offs[secUpperOff]+4*uint64(r.node), 4); err != nil {
			return err
		}
		// The list itself, when the (now verified) level and offset say
		// it exists; a read past the section's end read nothing.
		if int(g.levels[r.node]) < r.level {
			continue
		}
		o := 4*uint64(g.upperOff[r.node]) + uint64(r.level-1)*stride
		if o+stride > uint64(len(v.secs[secUpper])) {
			continue
		}
		if err := v.verify(v.offs[secUpper]+o, stride); err != nil {
			return err
		}
	}
	return nil
}

// SearchRanges returns the byte ranges of the layout ([off, off+n), from
// its first byte) that searches read through the View: the header and
// every section but the float vectors, which rescoring reads with the
// vector reader when one is set (SetVectorReader), else through the View
// too. A caller that warms a View (verifies and maps it ahead of the
// first searches) reads these.
func (v *View) SearchRanges() [][2]uint64 {
	out := [][2]uint64{{0, dataStart}}
	for i := range v.secs {
		if i == secVectors && v.g.readVec != nil {
			continue
		}
		if n := uint64(len(v.secs[i])); n > 0 {
			out = append(out, [2]uint64{v.offs[i], n})
		}
	}
	return out
}
