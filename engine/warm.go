package engine

import "slices"

// warmStep is how many bytes of a graph the warm-up verifies under one
// hold of the collection's read lock.
const warmStep = 1 << 20

// Warmed returns a channel closed once the warm-up that Options.Warm
// starts has gone through every segment (or stopped for Close); without
// Options.Warm it is closed from the start.
func (d *DB) Warmed() <-chan struct{} { return d.warmDone }

// warm verifies, once, the sections and graph chunks of every segment that
// searches read, touching their pages on the way (Options.Warm). Each step
// holds the collection's read lock and first checks that the segment is
// still one of the collection's (a compaction may have replaced and
// unmapped it). A checksum mismatch is left for the search that reads the
// bytes to report, as without warming.
func (d *DB) warm() {
	defer close(d.warmDone)
	colls := d.collections()
	for _, c := range colls {
		c.mu.RLock()
		segs := slices.Clone(c.segs)
		c.mu.RUnlock()
		for _, s := range segs {
			if !d.warmSegment(c, s) {
				return
			}
		}
	}
}

// warmSegment warms s of c; false when the DB is closing.
func (d *DB) warmSegment(c *Collection, s *segment) bool {
	live := func() bool { return slices.Contains(c.segs, s) }
	c.mu.RLock()
	if live() {
		_ = s.need(slices.Concat(recordSections, []sectionKind{secKeyword, secNamespace})...)
	}
	c.mu.RUnlock()
	if s.sf.chunks == nil || s.view.Load() == nil {
		return !d.stopping.Load() // before version 4 the graph is verified whole at first use
	}
	base := s.graphOffset()
	for _, r := range s.view.Load().SearchRanges() {
		for off := r[0]; off < r[0]+r[1]; off += warmStep {
			if d.stopping.Load() {
				return false
			}
			c.mu.RLock()
			if !live() {
				c.mu.RUnlock()
				return true
			}
			_ = s.sf.verifyRange(base+off, min(warmStep, r[0]+r[1]-off))
			c.mu.RUnlock()
		}
	}
	return d.residentSegment(c, s, live)
}

// residentSegment moves s's codes and level-0 lists into memory of the
// process's own over huge pages (hnsw.View.Resident), swapped in under
// the collection's write lock, then drops the mapping's pages of those
// sections so that they are not resident twice. A View taken before the
// swap stays valid (the mapping stays until the segment closes). A
// damaged chunk leaves the segment as it was: the search that reads it
// reports it. An encrypted store's segments are images in anonymous
// memory already, which a copy would only double: they stay as they are.
// False when the DB is closing.
func (d *DB) residentSegment(c *Collection, s *segment, live func() bool) bool {
	if d.stopping.Load() {
		return false
	}
	if !s.sf.osMapped() {
		return true
	}
	c.mu.RLock()
	if !live() {
		c.mu.RUnlock()
		return true
	}
	rv, ranges, err := s.view.Load().Resident()
	c.mu.RUnlock()
	if err != nil {
		return true
	}
	c.mu.Lock()
	if live() {
		s.view.Store(rv)
		base := s.graphOffset()
		for _, r := range ranges {
			s.sf.dropPages(base+r[0], r[1])
		}
	}
	c.mu.Unlock()
	return !d.stopping.Load()
}
