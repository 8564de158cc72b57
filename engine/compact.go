package engine

import (
	"errors"
	"io"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

var errStopping = errors.New("engine: store is closing")

// Compact merges every collection's segments into one, dropping deleted and
// overwritten records, and flushes the mutable parts. A collection already
// in one segment is rewritten only if that segment's graph leaves live
// records unreachable (see UnreachableError) or is in an older format
// (docs/format/segment.md, "Versions"). Readers and writers keep going
// while the new segments are built; writers wait only for the install (a
// flush plus a manifest write).
func (d *DB) Compact() error { return d.compact(true) }

// CompactProgress is Compact reporting through p (nil: none) how many of the
// records of the segments it merges it has copied.
func (d *DB) CompactProgress(p Progress) error { return d.compactWith(true, p) }

// Background policy (pick): a segment with more than compactDeletedFraction
// of its records deleted is rewritten; segments of about the same size
// (compactTierWidth of them whose sizes share a power of compactTierWidth)
// are merged, so a record is copied O(log n) times however small the
// flushes; and the smallest segments are merged while a collection has more
// than compactMaxSegments, with every next smallest no larger than what is
// already chosen. Everything is merged when more than compactMaxOverrides
// access overrides accumulate. The loop runs the policy every
// CompactInterval, at once when a delete leaves a segment past
// compactDeletedFraction (so later writes stop paying for its tombstones:
// graph walks through deleted nodes, the deleted list in every manifest),
// and in Close, so a store used only by short-lived processes stays within
// compactMaxSegments too.
const (
	compactDeletedFraction = 0.3
	compactMaxSegments     = 6
	compactTierWidth       = 4
	// Touch'ed segment records keep their access stats in the manifest
	// until a compaction folds them into a segment.
	compactMaxOverrides = 1 << 16
)

func (d *DB) compact(all bool) error { return d.compactWith(all, nil) }

func (d *DB) compactWith(all bool, p Progress) error {
	workers := runtime.GOMAXPROCS(0) // asked for: as fast as the machine allows
	if !all {
		workers = 1 // the background policy: leave the other cores to the callers
	}
	return d.compactPicked(func(c *Collection) []*segment { return c.pick(all) }, p, workers)
}

// compactPicked merges, in each collection, the segments pick chooses
// (called with c.mu held for reading), inserting vectors into the merged
// graph from up to workers goroutines.
func (d *DB) compactPicked(pick func(c *Collection) []*segment, p Progress, workers int) error {
	if d.opts.ReadOnly {
		return ErrReadOnly
	}
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	if d.stopping.Load() {
		return errStopping
	}
	colls := d.collections()
	pc := &progressCounter{p: p}
	if p != nil {
		for _, c := range colls {
			c.mu.RLock()
			for _, s := range pick(c) {
				pc.total += int64(s.n)
			}
			c.mu.RUnlock()
		}
		pc.add(0)
	}
	var reps []*replacement
	defer func() {
		for _, r := range reps {
			if r.seg != nil && r.seg.sf.data != nil && !r.installed {
				r.seg.close()
				_ = d.opts.FS.Remove(d.segPath(r.seg.file))
			}
		}
	}()
	for _, c := range colls {
		r, err := d.buildReplacement(c, pick, pc, workers)
		if err != nil {
			return err
		}
		if r != nil {
			reps = append(reps, r)
		}
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if err := d.flushLocked(reps); err != nil {
		return err
	}
	for _, r := range reps {
		r.installed = true
	}
	return nil
}

// pick chooses the segments of c to merge (c.mu held for reading).
func (c *Collection) pick(all bool) []*segment {
	segs := c.segs
	if all || len(c.overrides) > compactMaxOverrides {
		dirty := len(segs) > 1 || len(c.overrides) > 0
		for _, s := range segs {
			dirty = dirty || s.ndel > 0
		}
		// A lone clean segment is rewritten only when its graph misses
		// live records (written by an older build): the walk is cheap
		// next to a rebuild, and the rebuilt graph reaches every node.
		// So is one in an older format (compaction converts it).
		for _, s := range segs {
			var ue *UnreachableError
			dirty = dirty || s.sf.version() < segVersion || errors.As(s.checkReachable(), &ue)
		}
		if !dirty {
			return nil
		}
		return segs
	}
	var chosen, rest []*segment
	for _, s := range segs {
		if float64(s.ndel) > compactDeletedFraction*float64(s.n) {
			chosen = append(chosen, s)
		} else {
			rest = append(rest, s)
		}
	}
	sort.SliceStable(rest, func(i, j int) bool { return rest[i].n < rest[j].n })
	// The smallest tier that holds compactTierWidth segments.
	for i := 0; i < len(rest); {
		j := i
		for j < len(rest) && tier(rest[j].n) == tier(rest[i].n) {
			j++
		}
		if j-i >= compactTierWidth {
			chosen = append(chosen, rest[i:j]...)
			rest = slices.Delete(slices.Clone(rest), i, j)
			break
		}
		i = j
	}
	merged := 0
	for len(rest) > 0 && len(segs)-len(chosen)+1 > compactMaxSegments {
		merged += rest[0].n
		chosen = append(chosen, rest[0])
		rest = rest[1:]
	}
	for merged > 0 && len(rest) > 0 && rest[0].n <= merged {
		merged += rest[0].n
		chosen = append(chosen, rest[0])
		rest = rest[1:]
	}
	if len(chosen) == 1 && chosen[0].ndel == 0 {
		return nil
	}
	return chosen
}

// tier is the size class of a segment of n records: floor(log_compactTierWidth(n)).
func tier(n int) int {
	t := 0
	for n >= compactTierWidth {
		n /= compactTierWidth
		t++
	}
	return t
}

// compactionDue reports whether the background policy would compact any
// collection now.
func (d *DB) compactionDue() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, c := range d.colls {
		c.mu.RLock()
		due := len(c.pick(false)) > 0
		c.mu.RUnlock()
		if due {
			return true
		}
	}
	return false
}

// noteDeletes asks the background loop for a compaction when a delete left
// a segment of c past compactDeletedFraction.
func (c *Collection) noteDeletes() {
	if c.db.opts.CompactInterval <= 0 {
		return
	}
	c.mu.RLock()
	due := slices.ContainsFunc(c.segs, func(s *segment) bool {
		return float64(s.ndel) > compactDeletedFraction*float64(s.n)
	})
	c.mu.RUnlock()
	if due {
		select {
		case c.db.compactSignal <- struct{}{}:
		default:
		}
	}
}

// buildReplacement writes the merged segment for c (nil when there is
// nothing to do). It holds no lock while building: the segments it reads
// stay mapped because only an install (which needs compactMu's holder, us)
// or Close and Drop (which wait for compactMu) close them.
func (d *DB) buildReplacement(c *Collection, pick func(c *Collection) []*segment, pc *progressCounter, workers int) (rep *replacement, err error) {
	// The output's number is taken before the inputs are read, so every
	// file flushed after that read (which may hold newer copies of its
	// records) has a larger number: a manifest rebuilt from seg/ alone
	// relies on it (see rebuildManifest).
	d.writeMu.Lock()
	file := d.nextFile
	d.nextFile++
	d.writeMu.Unlock()
	defer func() {
		if rep == nil || rep.seg == nil {
			d.writeMu.Lock()
			if d.nextFile == file+1 {
				d.nextFile-- // unused and nothing taken since: give it back
			}
			d.writeMu.Unlock()
		}
	}()
	c.mu.RLock()
	if c.usable() != nil {
		c.mu.RUnlock()
		return nil, nil
	}
	old := pick(c)
	if len(old) == 0 {
		c.mu.RUnlock()
		return nil, nil
	}
	old = append([]*segment(nil), old...)
	deleted := make([][]uint64, len(old))
	for i, s := range old {
		deleted[i] = append([]uint64(nil), s.deleted...)
	}
	ov := make(map[string]access, len(c.overrides))
	for k, v := range c.overrides {
		ov[k] = v
	}
	c.mu.RUnlock()

	r := &replacement{c: c, old: old, folded: map[string]access{}}
	// Most of a merge's work is inserting vectors into the new graph. The
	// largest input without deleted records lends its graph instead: its
	// nodes keep their ids and links, and only the other inputs' vectors
	// are inserted (at 1M x 1024-d, compacting one large segment and a
	// few small ones rebuilt the large one's graph for half an hour).
	seed, live := seedInput(old, deleted)
	if !seedMerges {
		seed = -1
	}
	var mem *memtable
	if seed >= 0 {
		if mem, err = newMemtableFrom(c.cfg, &d.opts, old[seed], live); err != nil {
			seed = -1 // damaged or of other parameters: rebuild from the records
		}
	}
	if seed < 0 {
		if mem, err = newMemtableSized(c.cfg, &d.opts, live); err != nil {
			return nil, err
		}
	}
	order := make([]int, 0, len(old))
	if seed >= 0 {
		order = append(order, seed)
	}
	for i := range old {
		if i != seed {
			order = append(order, i)
		}
	}
	var batch []Record // records waiting to be inserted together (insertBatch)
	// The vectors read go into arrays reused from batch to batch (the
	// graph keeps copies): fresh ones were 4 KiB of garbage per 1024-d
	// record, which the collector let pile up to as much again as the
	// live memtable, the merge's memory peak.
	vecs := make([][]float32, mergeBatch)
	for _, i := range order {
		s := old[i]
		for node := uint32(0); node < uint32(s.n); node++ {
			if node%1024 == 1023 {
				pc.add(1024)
			}
			if w := int(node >> 6); w < len(deleted[i]) && deleted[i][w]&(1<<(node&63)) != 0 {
				continue
			}
			if node%1024 == 0 && (d.stopping.Load() || c.abort.Load()) {
				return nil, errStopping
			}
			j := len(batch) // the adopted seed's vector is only checked: any array will do
			if vecs[j] == nil {
				vecs[j] = make([]float32, 0, c.cfg.Dim)
			}
			rec, err := s.verifiedRecord(node, ov, vecs[j])
			if err != nil {
				return nil, err
			}
			if a, ok := ov[rec.ID]; ok {
				r.folded[rec.ID] = a
			}
			if i == seed {
				err = mem.adopt(rec, node)
			} else if batch = append(batch, rec); len(batch) == mergeBatch {
				err = mem.insertBatch(batch, workers)
				batch = batch[:0]
			}
			if err != nil {
				return nil, err
			}
			r.src = append(r.src, srcRef{seg: i, node: node})
		}
		pc.add(int64(s.n % 1024))
	}
	if len(batch) > 0 {
		if err := mem.insertBatch(batch, workers); err != nil {
			return nil, err
		}
	}
	if mem.live == 0 {
		return r, nil
	}
	if order := mergeOrder(mem, d.opts.NamespaceField); order != nil && clusterMerges {
		if err := mem.permute(order); err != nil {
			return nil, err
		}
		src := make([]srcRef, len(r.src))
		for i, old := range order {
			src[i] = r.src[old]
		}
		r.src = src
	}
	path := d.segPath(file)
	// The merged file covers what its inputs covered and supersedes them.
	sw := segWrite{file: file}
	for _, s := range old {
		sw.lsn = max(sw.lsn, s.hdr.lsn)
		sw.replaces = append(sw.replaces, s.file)
	}
	slices.Sort(sw.replaces)
	if _, err := writeMemtableSegment(d.opts.FS, d.segDir(), c.cfg, mem, d.opts.NamespaceField, sw, d.opts.CompactBytesPerSec); err != nil {
		_ = d.opts.FS.Remove(path)
		return nil, err
	}
	r.seg, err = openSegment(d.opts.FS, path, file, c.cfg, uint32(len(mem.recs)), false)
	if err != nil {
		_ = d.opts.FS.Remove(path)
		return nil, err
	}
	return r, nil
}

// clusterMerges lets merges order their records (mergeOrder); a test turns
// it off to compare.
var clusterMerges = true

// mergeOrder returns the order a merged segment numbers m's records in:
// grouped by their namespace value (records without one first), and within
// a group, or across the whole segment without a namespace field, in the
// graph's locality order (hnsw's LocalityOrder: a breadth-first walk of
// level 0, so that a node's neighbours sit at nearby ids and an expansion's
// codes share cache lines and pages; 15-20% more queries per CPU second on
// 1M x 100-d). A compacted segment's sessions are then ranges of node ids:
// a session's records are neighbours in every section, its keyword
// postings a run of each posting list (keyword.SearchAmong reads just that
// run) and its exact vector scan a sequential read. nil when there is
// nothing to order.
func mergeOrder(m *memtable, nsField string) []uint32 {
	if len(m.recs) < 2 {
		return nil
	}
	order := m.idx.LocalityOrder()
	if len(order) != len(m.recs) {
		return nil // not one node a record: leave them as they are
	}
	if nsField == "" {
		return order
	}
	session := make([]string, len(m.recs)) // looked up once, not per comparison
	for i := range m.recs {
		if v, ok := m.recs[i].rec.Meta[nsField]; ok && v.kind == KindString {
			session[i] = v.s
		}
	}
	slices.SortStableFunc(order, func(a, b uint32) int { return strings.Compare(session[a], session[b]) })
	return order
}

// mergeBatch is how many records a merge inserts into its graph at once,
// from its workers.
const mergeBatch = 4096

// seedMerges lets merges start from their largest input's graph; the
// opt-in TestCompactionCost turns it off to time a rebuild.
var seedMerges = true

// seedMin is the fewest nodes an input needs to lend its graph to a merge:
// below it, inserting is cheap and a graph built from all the inputs is
// as good.
const seedMin = 1024

// seedInput returns the index of the largest of old (at least seedMin
// nodes) with no deleted records, whose graph a merge can start from, or
// -1; and the live records of all of old.
func seedInput(old []*segment, deleted [][]uint64) (seed, live int) {
	seed = -1
	for i, s := range old {
		dead := 0
		for _, w := range deleted[i] {
			dead += bits.OnesCount64(w)
		}
		live += s.n - dead
		if dead == 0 && s.view != nil && s.view.Tombstones() == 0 && s.n >= seedMin && (seed < 0 || s.n > old[seed].n) {
			seed = i
		}
	}
	return seed, live
}

// throttle delays writes to about bytesPerSec.
type throttle struct {
	w           io.Writer
	bytesPerSec int64
	start       time.Time
	n           int64
}

func (t *throttle) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.n += int64(n)
	due := t.start.Add(time.Duration(float64(t.n) / float64(t.bytesPerSec) * float64(time.Second)))
	if wait := time.Until(due); wait > 0 {
		time.Sleep(wait)
	}
	return n, err
}

// writeSegmentFileLimited streams sections into dir/name atomically (see
// writeAtomic) at about bytesPerSec (0: unthrottled) and returns the
// file's size on disk. In an encrypted store the file is sealed
// (sealedseg.go) under a key derived from those of sessions, the values of
// the namespace field among its records.
func writeSegmentFileLimited(fsys FS, dir, name string, sections []section, bytesPerSec int64, sessions []string) (int64, error) {
	var size int64
	keys := segmentKeys(fsys)
	err := writeAtomic(fsys, dir, name, func(w io.Writer) error {
		if bytesPerSec > 0 {
			w = &throttle{w: w, bytesPerSec: bytesPerSec, start: time.Now()}
		}
		if keys == nil {
			var err error
			size, err = streamSegment(w, sections)
			return err
		}
		cw := &byteCounter{w: w}
		sw, err := newSealWriter(cw, keys, segNameNumber(name), keys.KeyIDs(sessions))
		if err != nil {
			return err
		}
		if _, err := streamSegment(sw, sections); err != nil {
			return err
		}
		err = sw.Close()
		size = cw.n
		return err
	})
	return size, err
}

// byteCounter counts what is written through it.
type byteCounter struct {
	w io.Writer
	n int64
}

func (c *byteCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
