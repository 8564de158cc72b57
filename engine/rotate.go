package engine

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
)

// Key rotation (docs/format/encryption.md, "Key rotation").

// ErrRotationUnfinished: DropRetiredKeys was asked while live files are
// still sealed with retired keys (run RotateKeys to finish first).
var ErrRotationUnfinished = errors.New("engine: files are still sealed with retired keys: finish the rotation first")

// RotateKeys starts a new key generation in an encrypted store and
// rewrites every segment file under it. With writes held off it flushes
// (so no WAL record after the checkpoint is sealed with the old keys) and
// replaces KEYS with one holding a new store key and a new key for every
// session, the old ones kept, retired, so everything sealed before still
// opens (this store's files until rewritten, and backups). Then it
// rewrites the files sealed with an older generation one at a time, each
// installed with its own manifest, reporting through p (files done, files
// in all; p may be nil). Readers and writers keep going meanwhile.
//
// After an interruption (a kill -9 included) the store opens as it was
// left, and RotateKeys resumes: while any live file is sealed with an
// older generation it only rewrites, without starting another
// generation. It returns the generation now current.
func (d *DB) RotateKeys(p Progress) (uint32, error) {
	if d.keys == nil {
		return 0, fmt.Errorf("%w: the store is not encrypted", ErrInvalid)
	}
	if d.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	d.writeMu.Lock()
	if d.closed {
		d.writeMu.Unlock()
		return 0, ErrClosed
	}
	if !slices.ContainsFunc(d.staleSegments(), func(s staleSegment) bool { return s.seg.sf.keyGen > 0 }) {
		// No rotation to resume (files of an older generation): start one.
		// (Plaintext files, written before segment files were sealed, are
		// rewritten sealed either way.)
		if err := d.flushLocked(nil); err != nil {
			d.writeMu.Unlock()
			return 0, err
		}
		next := d.keys.Clone()
		next.Rotate()
		if err := writeKeys(d.opts.FS, d.dir, next, d.opts.Key); err != nil {
			d.writeMu.Unlock()
			return 0, fmt.Errorf("engine: rotate keys: %w", err)
		}
		d.setKeys(next)
	}
	gen := d.keys.Generation()
	d.writeMu.Unlock()
	total := int64(len(d.staleSegments()))
	if p != nil {
		p(0, total)
	}
	prev, stuck := -1, 0
	for done := int64(0); ; {
		stale := d.staleSegments()
		if len(stale) == 0 {
			break
		}
		if prev >= 0 && len(stale) >= prev {
			stuck++
		} else {
			stuck = 0
		}
		if stuck >= 3 {
			// Nothing rewritten for rounds (a damaged collection, say):
			// say so rather than loop.
			return gen, fmt.Errorf("engine: rotate keys: %d files could not be rewritten (check the store)", len(stale))
		}
		prev = len(stale)
		// One file per collection per round: each is installed (a
		// manifest) before the next is read, so an interruption keeps
		// what was done.
		first := map[*Collection]*segment{}
		for _, s := range stale {
			if first[s.c] == nil {
				first[s.c] = s.seg
			}
		}
		err := d.compactPicked(func(c *Collection) []*segment {
			if s := first[c]; s != nil && c.hasSegments([]*segment{s}) {
				return []*segment{s}
			}
			return nil
		}, nil, runtime.GOMAXPROCS(0))
		if err != nil && !errors.Is(err, errCompactionStale) {
			return gen, fmt.Errorf("engine: rotate keys: %w", err)
		}
		done += int64(len(first))
		if p != nil {
			p(min(done, total), total)
		}
	}
	// One more manifest: the fallback then names only rewritten files,
	// and the superseded ones leave the disk.
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if err := d.flushLocked(nil); err != nil {
		return gen, fmt.Errorf("engine: rotate keys: %w", err)
	}
	return gen, nil
}

type staleSegment struct {
	c   *Collection
	seg *segment
}

// staleSegments lists the live segment files sealed with a store key
// older than the current generation, and plaintext ones (generation 0:
// written before segment files were sealed).
func (d *DB) staleSegments() []staleSegment {
	keys := d.keyRef.Load()
	if keys == nil {
		return nil
	}
	gen := keys.Generation()
	d.mu.RLock()
	defer d.mu.RUnlock()
	var out []staleSegment
	for _, name := range sortedKeys(d.colls) {
		c := d.colls[name]
		c.mu.RLock()
		for _, s := range c.segs {
			if s.sf.keyGen < gen {
				out = append(out, staleSegment{c, s})
			}
		}
		c.mu.RUnlock()
	}
	return out
}

// DropRetiredKeys destroys the keys of generations before the current one,
// once no live file is sealed with them (ErrRotationUnfinished otherwise):
// backups taken before the last rotation no longer open with the store's
// KEYS. It reports whether there was anything to drop.
func (d *DB) DropRetiredKeys() (bool, error) {
	if d.keys == nil {
		return false, fmt.Errorf("%w: the store is not encrypted", ErrInvalid)
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if d.closed {
		return false, ErrClosed
	}
	if d.opts.ReadOnly {
		return false, ErrReadOnly
	}
	if len(d.staleSegments()) > 0 {
		return false, ErrRotationUnfinished
	}
	if !d.keys.Retired() {
		return false, nil
	}
	// WAL records after the checkpoint may still be sealed with a retired
	// session key (written between a rotation and now only with current
	// keys, but a store rotated by an older build may differ): flush them
	// into files sealed with the current keys first.
	if err := d.flushLocked(nil); err != nil {
		return false, err
	}
	next := d.keys.Clone()
	next.DropRetired()
	if err := writeKeys(d.opts.FS, d.dir, next, d.opts.Key); err != nil {
		return false, fmt.Errorf("engine: drop retired keys: %w", err)
	}
	d.setKeys(next)
	return true, nil
}
