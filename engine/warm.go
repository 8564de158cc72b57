package engine

import (
	"runtime"
	"slices"
)

// warmStep is how many bytes of a graph the warm-up verifies under one
// hold of the collection's read lock.
const warmStep = 1 << 20

// Warmed returns a channel closed once the warm-up that Options.Warm
// starts has gone through every segment (or stopped for Close); without
// Options.Warm it is closed from the start.
func (d *DB) Warmed() <-chan struct{} { return d.warmDone }

// warm verifies, once, the sections and graph chunks of every segment that
// searches read, touching their pages on the way, parses the namespace
// postings and the keyword section, and readies a search's scratch per
// CPU (Options.Warm). Each step holds the collection's read lock and first
// checks that the segment is still one of the collection's (a compaction
// may have replaced and unmapped it). A checksum mismatch is left for the
// search that reads the bytes to report, as without warming.
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
		// Parsed on first use otherwise: the namespace postings (at 1M
		// memories, 10 ms and a collection in the first session-filtered
		// search) and the keyword section.
		_, _ = s.namespace("", "")
		_, _ = s.keyword()
		if s.view != nil {
			// One search's scratch per CPU, so that the first searches do
			// not fault their visited marks in page by page.
			s.view.Reserve(runtime.GOMAXPROCS(0))
		}
	}
	c.mu.RUnlock()
	if s.sf.chunks == nil || s.view == nil {
		return !d.stopping.Load() // before version 4 the graph is verified whole at first use
	}
	base := s.graphOffset()
	for _, r := range s.view.SearchRanges() {
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
	return true
}
