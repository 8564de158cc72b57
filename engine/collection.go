package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Collection is a named set of records with one dimension, metric and
// embedding model. Its methods are safe for concurrent use.
type Collection struct {
	db  *DB
	cfg CollectionConfig

	// mu: readers hold the read side; applying a logged op and swapping
	// segments hold the write side (after DB.writeMu).
	mu        sync.RWMutex
	mem       *memtable
	segs      []*segment
	overrides map[string]access
	dropped   bool
	abort     atomic.Bool  // a drop is waiting: running compactions stop
	broken    error        // set at Open when a segment file is damaged
	brokenMan manifestColl // that collection's manifest entry, kept as is
}

func newCollection(d *DB, cfg CollectionConfig) (*Collection, error) {
	mem, err := newMemtable(cfg, &d.opts)
	if err != nil {
		return nil, err
	}
	return &Collection{db: d, cfg: cfg, mem: mem, overrides: map[string]access{}}, nil
}

// Config returns the collection's configuration.
func (c *Collection) Config() CollectionConfig { return c.cfg }

// Name returns the collection's name.
func (c *Collection) Name() string { return c.cfg.Name }

func (c *Collection) usable() error {
	if c.broken != nil {
		return c.broken
	}
	if c.dropped {
		return fmt.Errorf("%w: collection %q was dropped or the store closed", ErrClosed, c.cfg.Name)
	}
	return nil
}

// removeLocked makes id's current copy dead (memtable) or deleted
// (segment) and forgets its access override. It reports whether id was
// live.
func (c *Collection) removeLocked(id string) bool {
	delete(c.overrides, id)
	if c.mem.remove(id) {
		return true
	}
	for i := len(c.segs) - 1; i >= 0; i-- {
		if node, ok := c.segs[i].find(id); ok {
			c.segs[i].markDeleted(node)
			return true
		}
	}
	return false
}

// where is a live record's location: the memtable (seg == nil) or a segment.
type where struct {
	seg  *segment
	node uint32
}

func (c *Collection) locateLocked(id string) (where, bool) {
	if _, node, ok := c.mem.get(id); ok {
		return where{node: node}, true
	}
	for i := len(c.segs) - 1; i >= 0; i-- {
		if node, ok := c.segs[i].find(id); ok {
			return where{seg: c.segs[i], node: node}, true
		}
	}
	return where{}, false
}

func (c *Collection) recordAt(w where, withVec, withText bool) (Record, error) {
	if w.seg == nil {
		return c.mem.record(w.node, withVec, withText), nil
	}
	return w.seg.record(w.node, c.overrides, withVec, withText)
}

func (c *Collection) accessOf(w where, id string) access {
	if w.seg == nil {
		r := &c.mem.recs[w.node].rec
		return access{count: r.AccessCount, last: unixNano(r.LastAccess)}
	}
	if a, ok := c.overrides[id]; ok {
		return a
	}
	return w.seg.accessAt(w.node)
}

func (c *Collection) setAccessLocked(id string, count uint64, at int64) {
	w, ok := c.locateLocked(id)
	if !ok {
		return
	}
	if w.seg == nil {
		r := &c.mem.recs[w.node].rec
		r.AccessCount, r.LastAccess = count, fromUnixNano(at)
		return
	}
	c.overrides[id] = access{count: count, last: at}
}

func (c *Collection) hasSegments(old []*segment) bool {
	for _, s := range old {
		if !slices.Contains(c.segs, s) {
			return false
		}
	}
	return true
}

// replaceSegments returns c.segs with old removed and seg (if any) in the
// place of the first of them.
func (c *Collection) replaceSegments(old []*segment, seg *segment) []*segment {
	out := make([]*segment, 0, len(c.segs))
	placed := false
	for _, s := range c.segs {
		if slices.Contains(old, s) {
			if !placed && seg != nil {
				out = append(out, seg)
			}
			placed = true
			continue
		}
		out = append(out, s)
	}
	return out
}

// write runs fn holding the DB write lock after checking the collection.
func (c *Collection) write(fn func() error) error {
	c.db.writeMu.Lock()
	defer c.db.writeMu.Unlock()
	if c.db.closed {
		return ErrClosed
	}
	if err := c.usable(); err != nil {
		return err
	}
	return fn()
}

// read runs fn holding the collection's read lock after checking it and
// verifying (once per segment) the sections every record read needs.
func (c *Collection) read(fn func() error) error {
	return c.readNeeding(false, fn)
}

// readNeeding is read that also verifies the graph sections (codes,
// vectors, lists) when graph is set: a vector search, or records with
// their vectors.
func (c *Collection) readNeeding(graph bool, fn func() error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.usable(); err != nil {
		return err
	}
	for _, s := range c.segs {
		if err := s.need(recordSections...); err != nil {
			return err
		}
		if graph {
			if err := s.need(secGraph); err != nil {
				return err
			}
		}
	}
	return fn()
}

// Upsert inserts or replaces records by ID, as one WAL record. Every record
// is validated first (ID, dimension, finite vector, sizes, metadata, no ID
// twice in the batch); on any error nothing is written. A zero Created
// keeps the replaced record's (or is set to now), a zero Updated is set to
// now; LastAccess and AccessCount are stored as given.
func (c *Collection) Upsert(ctx context.Context, records []Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(records) > MaxBatchRecords {
		return fmt.Errorf("%w: %d records in one batch, limit %d", ErrInvalid, len(records), MaxBatchRecords)
	}
	if len(records) == 0 {
		return nil
	}
	batch := make([]Record, len(records))
	seen := make(map[string]bool, len(records))
	for i := range records {
		r := records[i]
		vec, err := validateRecord(c.cfg, &r)
		if err != nil {
			return err
		}
		if seen[r.ID] {
			return fmt.Errorf("%w: record ID %q appears twice in the batch", ErrInvalid, r.ID)
		}
		seen[r.ID] = true
		r.Vector = vec
		r.Meta = cloneMeta(r.Meta)
		batch[i] = r
	}
	return c.write(func() error {
		now := time.Now().UTC()
		c.mu.RLock()
		for i := range batch {
			r := &batch[i]
			if r.Created.IsZero() {
				r.Created = now
				if w, ok := c.locateLocked(r.ID); ok {
					if old, err := c.recordAt(w, false, false); err == nil && !old.Created.IsZero() {
						r.Created = old.Created
					}
				}
			}
			if r.Updated.IsZero() {
				r.Updated = now
			}
		}
		c.mu.RUnlock()
		return c.db.logAndApply(&walOp{op: walUpsert, coll: c.cfg.Name, records: batch})
	})
}

// Get returns a copy of the record with that ID (with its vector), or an
// error wrapping ErrNotFound.
func (c *Collection) Get(id string) (Record, error) {
	var r Record
	err := c.readNeeding(true, func() error {
		w, ok := c.locateLocked(id)
		if !ok {
			return fmt.Errorf("%w: record %.60q in %q", ErrNotFound, id, c.cfg.Name)
		}
		var err error
		r, err = c.recordAt(w, true, true)
		return err
	})
	return r, err
}

// GetNoVector is Get without the record's vector (Record.Vector nil): it
// reads neither the vector nor, in a segment, the graph, so callers that
// want a record's text and metadata do not pull vectors into memory.
func (c *Collection) GetNoVector(id string) (Record, error) {
	var r Record
	err := c.readNeeding(false, func() error {
		w, ok := c.locateLocked(id)
		if !ok {
			return fmt.Errorf("%w: record %.60q in %q", ErrNotFound, id, c.cfg.Name)
		}
		var err error
		r, err = c.recordAt(w, false, true)
		return err
	})
	return r, err
}

// Delete removes the records with these IDs (unknown IDs are ignored) as
// one WAL record and returns how many existed.
func (c *Collection) Delete(ids ...string) (int, error) {
	for _, id := range ids {
		if err := validateID(id); err != nil {
			return 0, err
		}
	}
	n := 0
	err := c.write(func() error {
		c.mu.RLock()
		var live []string
		seen := map[string]bool{}
		for _, id := range ids {
			if _, ok := c.locateLocked(id); ok && !seen[id] {
				seen[id] = true
				live = append(live, id)
			}
		}
		c.mu.RUnlock()
		if len(live) == 0 {
			return nil
		}
		n = len(live)
		return c.db.logAndApply(&walOp{op: walDelete, coll: c.cfg.Name, ids: live})
	})
	if err != nil {
		return 0, err
	}
	if n > 0 {
		c.noteDeletes()
	}
	return n, nil
}

// DeleteWhere removes every record f matches (one WAL record naming them)
// and returns how many. A nil filter deletes everything.
func (c *Collection) DeleteWhere(f *Filter) (int, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	n := 0
	err := c.write(func() error {
		var ids []string
		c.mu.RLock()
		err := c.scanLocked(f, false, func(r Record) bool { ids = append(ids, r.ID); return true })
		c.mu.RUnlock()
		if err != nil || len(ids) == 0 {
			return err
		}
		n = len(ids)
		return c.db.logAndApply(&walOp{op: walDelete, coll: c.cfg.Name, ids: ids})
	})
	if err != nil {
		return 0, err
	}
	if n > 0 {
		c.noteDeletes()
	}
	return n, nil
}

// Touch records an access to each record: AccessCount+1 and LastAccess =
// at. Unknown IDs are ignored. All of it is one WAL record with the
// resulting counts; segments are never rewritten for it.
func (c *Collection) Touch(ids []string, at time.Time) error {
	if err := CheckTime(at); err != nil {
		return fmt.Errorf("engine: touch: %w", err)
	}
	for _, id := range ids {
		if err := validateID(id); err != nil {
			return err
		}
	}
	return c.write(func() error {
		o := &walOp{op: walTouch, coll: c.cfg.Name, at: unixNano(at)}
		seen := map[string]bool{}
		c.mu.RLock()
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			if w, ok := c.locateLocked(id); ok {
				o.ids = append(o.ids, id)
				o.counts = append(o.counts, c.accessOf(w, id).count+1)
			}
		}
		c.mu.RUnlock()
		if len(o.ids) == 0 {
			return nil
		}
		return c.db.logAndApply(o)
	})
}

// Count returns how many live records f matches (nil: all).
func (c *Collection) Count(f *Filter) (int, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	n := 0
	err := c.read(func() error {
		if f == nil {
			n = c.mem.live
			for _, s := range c.segs {
				n += s.live()
			}
			return nil
		}
		for node := range c.mem.recs {
			if !c.mem.recs[node].dead && f.match(c.mem.getter(uint32(node))) {
				n++
			}
		}
		for _, s := range c.segs {
			match := s.matcher(f)
			for node := uint32(0); node < uint32(s.n); node++ {
				if !s.isDeleted(node) && match(node) {
					n++
				}
			}
		}
		return nil
	})
	return n, err
}

// Scan calls fn with a copy of every live record f matches (without
// vectors unless withVectors), in no particular order, until fn returns
// false. fn runs under the collection's read lock: it must not call this
// collection's methods (a nested read lock deadlocks behind a waiting
// writer); collect IDs and act after Scan returns.
func (c *Collection) Scan(f *Filter, withVectors bool, fn func(Record) bool) error {
	if fn == nil {
		return fmt.Errorf("%w: nil Scan callback", ErrInvalid)
	}
	if err := f.Validate(); err != nil {
		return err
	}
	return c.readNeeding(withVectors, func() error { return c.scanLocked(f, withVectors, fn) })
}

func (c *Collection) scanLocked(f *Filter, withVec bool, fn func(Record) bool) error {
	var err error
	for node := range c.mem.recs {
		if c.mem.recs[node].dead || !f.match(c.mem.getter(uint32(node))) {
			continue
		}
		if !fn(c.mem.record(uint32(node), withVec, true)) {
			return nil
		}
	}
	for _, s := range c.segs {
		match := s.matcher(f)
		for node := uint32(0); node < uint32(s.n); node++ {
			if s.isDeleted(node) || !match(node) {
				continue
			}
			var r Record
			if r, err = s.record(node, c.overrides, withVec, true); err != nil {
				return err
			}
			if !fn(r) {
				return nil
			}
		}
	}
	return nil
}
