package engine

import (
	"errors"
	"fmt"
	"github.com/engramdb/engram/internal/crypt"
	"io/fs"

	"github.com/engramdb/engram/wal"
)

// Flush writes the mutable parts of every collection as segment files,
// writes the manifest and truncates the WAL.
func (d *DB) Flush() error {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	return d.flushLocked(nil)
}

// replacement is a compaction result to install: old segments of c are
// replaced by seg (nil when nothing survived); src maps seg's nodes to
// their origin, to carry over deletes made while it was built.
type replacement struct {
	c         *Collection
	old       []*segment
	seg       *segment
	src       []srcRef
	folded    map[string]access // overrides folded into seg
	overrides map[string]access // computed at install
	installed bool
}

type srcRef struct {
	seg  int // index into old
	node uint32
}

// flushLocked flushes every mutable part and installs reps, with one
// manifest. On error nothing changes in memory and the files it wrote are
// removed.
func (d *DB) flushLocked(reps []*replacement) (err error) {
	if d.closed {
		return ErrClosed
	}
	if d.opts.ReadOnly {
		return ErrReadOnly
	}
	for _, c := range d.colls {
		if c.broken != nil {
			return fmt.Errorf("engine: flush refused while collection %q is damaged (drop it or restore the file): %w", c.cfg.Name, c.broken)
		}
	}
	fresh := map[*Collection]*segment{}
	var emptied []*Collection
	defer func() {
		if err != nil {
			for _, s := range fresh {
				s.close()
				_ = d.opts.FS.Remove(d.segPath(s.file))
			}
		}
	}()
	names := sortedKeys(d.colls)
	for _, name := range names {
		c := d.colls[name]
		if c.mem.live == 0 {
			if len(c.mem.recs) > 0 {
				// Only records written and deleted since the last
				// flush: nothing to write, and the manifest below moves
				// the WAL checkpoint past them, so they are dropped
				// (a purged session's leave memory with them).
				emptied = append(emptied, c)
			}
			continue
		}
		file := d.nextFile
		d.nextFile++
		path := d.segPath(file)
		if _, err := writeMemtableSegment(d.opts.FS, d.segDir(), c.cfg, c.mem, d.opts.NamespaceField, segWrite{file: file, lsn: d.lastLSN}, 0); err != nil {
			_ = d.opts.FS.Remove(path)
			return fmt.Errorf("engine: flush %q: %w", name, err)
		}
		s, err := openSegment(d.opts.FS, path, file, c.cfg, uint32(len(c.mem.recs)), false)
		if err != nil {
			_ = d.opts.FS.Remove(path)
			return fmt.Errorf("engine: flush %q: reopen: %w", name, err)
		}
		for node := range c.mem.recs {
			if c.mem.recs[node].dead {
				s.markDeleted(uint32(node))
			}
		}
		fresh[c] = s
	}
	for _, r := range reps {
		if cur, ok := d.colls[r.c.cfg.Name]; !ok || cur != r.c || !r.c.hasSegments(r.old) {
			return errCompactionStale
		}
		if r.seg != nil {
			for i, ref := range r.src {
				if r.old[ref.seg].isDeleted(ref.node) {
					r.seg.markDeleted(uint32(i))
				}
			}
		}
		r.overrides = make(map[string]access, len(r.c.overrides))
		for id, a := range r.c.overrides {
			if f, ok := r.folded[id]; !ok || f != a {
				r.overrides[id] = a
			}
		}
	}
	m := d.manifestLocked(fresh, reps)
	// Every record so far is durable and the next goes to a new segment,
	// created durably before the manifest names it (see checkWALReaches).
	walSeg, err := d.log.Roll()
	if err != nil {
		return fmt.Errorf("engine: write-ahead log: %w", err)
	}
	m.walSeg, m.durable = walSeg, uint64(d.lastLSN)
	if err := d.writeManifestLocked(m); err != nil {
		return err
	}
	// The manifest is durable: install in memory.
	for c, s := range fresh {
		c.mu.Lock()
		c.segs = append(c.segs, s)
		d.memBytes -= c.mem.size
		c.mem, _ = newMemtable(c.cfg, &d.opts) // cannot fail: cfg was validated
		c.mu.Unlock()
	}
	for _, c := range emptied {
		c.mu.Lock()
		d.memBytes -= c.mem.size
		c.mem, _ = newMemtable(c.cfg, &d.opts)
		c.mu.Unlock()
	}
	for _, r := range reps {
		r.c.mu.Lock()
		r.c.segs = r.c.replaceSegments(r.old, r.seg)
		r.c.overrides = r.overrides
		for _, s := range r.old {
			d.pendingRemove = append(d.pendingRemove, s.file)
			s.close()
		}
		r.c.mu.Unlock()
	}
	fresh = nil // installed: no longer the deferred cleanup's to remove
	d.checkpoint = wal.LSN(m.checkpoint)
	// Cleanup errors leave garbage that the next Open or flush removes;
	// the data is safe.
	return d.cleanupLocked(m)
}

// writeManifestLocked writes m as the next manifest and makes the one it
// supersedes the fallback: what that one names stays on disk (and its
// WAL) until the next manifest. A returned error means m is not on disk.
func (d *DB) writeManifestLocked(m *manifest) error {
	num := d.manMax + 1
	err, curErr := writeManifest(d.opts.FS, d.dir, num, m)
	if err != nil {
		return err
	}
	d.manMax = num
	if d.keys != nil && segmentKeys(d.opts.FS) != nil && d.keys.Flags()&crypt.FlagSealedManifests == 0 {
		// A store encrypted before manifests were sealed: now that one
		// is durable, KEYS says so, and a plaintext manifest is refused
		// from here on. Best effort: the next manifest retries.
		next := d.keys.Clone()
		next.SetFlags(crypt.FlagSealedManifests)
		if writeKeys(d.opts.FS, d.dir, next, d.opts.Key) == nil {
			d.setKeys(next)
		}
	}
	prevNum := d.manNum
	d.manNum = num
	d.keepFrom = d.checkpoint
	d.prevFiles = map[uint64]bool{}
	for _, c := range d.colls {
		for _, s := range c.segs {
			d.prevFiles[s.file] = true
		}
		for _, s := range c.brokenMan.segs {
			d.prevFiles[s.file] = true
		}
	}
	for _, f := range d.pendingNew {
		d.prevFiles[f] = true // dropped since the previous manifest, which names it
	}
	d.pendingRemove = append(d.pendingRemove, d.pendingNew...)
	d.pendingNew = nil
	d.manProblems = nil
	d.prevManifest = prevNum
	d.cleanupErr = curErr // nil: CURRENT names num
	return nil
}

// cleanupLocked runs after a manifest m is installed: it removes the
// manifests older than the previous one, then the segment files neither m
// nor the previous manifest names, then the WAL segments the previous
// manifest's checkpoint covers (in that order, so a crash midway never
// leaves a manifest without the files and WAL it needs).
func (d *DB) cleanupLocked(m *manifest) error {
	var errs []error
	if d.cleanupErr != nil {
		// Removing the manifest a stale CURRENT names would make a store
		// that reads as corrupt (TestFailedCURRENTKeepsItsManifest).
		if err := writeFileAtomic(d.opts.FS, d.dir, currentName, []byte(manifestFileName(d.manNum)+"\n")); err != nil {
			return errors.Join(d.cleanupErr, fmt.Errorf("engine: write CURRENT: %w", err))
		}
		d.cleanupErr = nil
	}
	// Old manifests first: until they are gone, the files they name stay.
	if err := removeManifests(d.opts.FS, d.dir, d.manNum, d.prevManifest); err != nil {
		return errors.Join(append(errs, fmt.Errorf("engine: remove old manifests: %w", err))...)
	}
	named := m.files()
	var still []uint64
	removed := false
	for _, f := range d.pendingRemove {
		if named[f] {
			continue
		}
		if d.prevFiles[f] {
			still = append(still, f) // the fallback manifest names it
			continue
		}
		if err := d.opts.FS.Remove(d.segPath(f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			still = append(still, f)
		}
		removed = true
	}
	d.pendingRemove = still
	if removed {
		errs = append(errs, d.opts.FS.SyncDir(d.segDir()))
	}
	if err := d.truncateWAL(); err != nil {
		errs = append(errs, fmt.Errorf("engine: truncate WAL: %w", err))
	}
	return errors.Join(errs...)
}

// truncateWAL deletes the WAL segments whose records are all covered by
// the checkpoint of every manifest kept (keepFrom). When nothing follows
// it, that is every segment up to keepFrom's own (the log never deletes
// the one it appends to), so Open does not scan already-flushed records
// again.
func (d *DB) truncateWAL() error {
	if d.keepFrom == 0 {
		return nil
	}
	upTo := d.keepFrom
	if d.log.LastLSN() <= d.keepFrom {
		upTo = wal.LSN(uint64(d.keepFrom.Segment()+1) << 32)
	}
	return d.log.TruncateBefore(upTo)
}

// manifestLocked describes the state after installing fresh and reps.
func (d *DB) manifestLocked(fresh map[*Collection]*segment, reps []*replacement) *manifest {
	m := &manifest{nextFile: d.nextFile, checkpoint: uint64(d.lastLSN), kv: d.kv}
	repOf := map[*Collection]*replacement{}
	for _, r := range reps {
		repOf[r.c] = r
	}
	for _, name := range sortedKeys(d.colls) {
		c := d.colls[name]
		segs, ov := c.segs, c.overrides
		if r := repOf[c]; r != nil {
			segs, ov = c.replaceSegments(r.old, r.seg), r.overrides
		}
		if s := fresh[c]; s != nil {
			segs = append(segs[:len(segs):len(segs)], s)
		}
		mc := manifestColl{cfg: c.cfg, overrides: ov}
		for _, s := range segs {
			mc.segs = append(mc.segs, manifestSeg{file: s.file, count: uint32(s.n), size: s.sf.size(), deleted: s.deletedList()})
		}
		m.colls = append(m.colls, mc)
	}
	return m
}
