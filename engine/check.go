package engine

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/engramdb/engram/wal"
)

// Check verifies the store: every segment's section checksums, id map
// (sorted, valid, unique across the collection), metadata, texts and
// vectors, the BM25 sections, the manifest on disk against the files
// (each named file exists with the recorded size), every WAL segment, and
// that the previous manifest is still a fallback (the files it names and
// the WAL its replay needs are there). It returns the first problem, a
// *CorruptionError naming the file where one is damaged or missing; when
// every file is intact but a segment's graph does not reach all its live
// records (a full walk from the entry point), an *UnreachableError. It
// reads only (CheckDir checks a closed store without opening it for
// writing). It holds the write lock, so writers wait while it runs.
func (d *DB) Check() error { return d.CheckProgress(nil) }

// CheckProgress is Check reporting through p (nil: none) how many of the
// segments' records it has checked.
func (d *DB) CheckProgress(p Progress) error {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if err := d.checkManifests(); err != nil {
		return err
	}
	// Every WAL segment, those only a fallback manifest needs included.
	walDir := filepath.Join(d.dir, "wal")
	for _, seg := range walDamaged(d.opts.FS, walDir) {
		path := filepath.Join(walDir, fmt.Sprintf("%08d", seg))
		err := walSegmentDamage(d.opts.FS, path, seg)
		var we *wal.CorruptionError
		if tt := d.log.Recovery().TornTail; d.opts.ReadOnly && tt.Segment == seg && errors.As(err, &we) && we.Offset == tt.From {
			continue // a torn tail, which a writable open cuts (OpenActions)
		}
		return &CorruptionError{File: path, Err: err}
	}
	if st, err := loadManifests(d.opts.FS, d.dir); err != nil {
		return err
	} else if _, err := unusableFallback(d.opts.FS, d.dir, st); err != nil {
		return err
	}
	pc := &progressCounter{p: p}
	for _, c := range d.colls {
		c.mu.RLock()
		for _, s := range c.segs {
			pc.total += int64(s.n)
		}
		c.mu.RUnlock()
	}
	pc.add(0)
	var unreachable error // reported after every other check passed
	for _, name := range sortedKeys(d.colls) {
		c := d.colls[name]
		if c.broken != nil {
			return c.broken
		}
		var ue *UnreachableError
		if err := c.check(pc); errors.As(err, &ue) {
			unreachable = cmp.Or(unreachable, err)
		} else if err != nil {
			return err
		}
	}
	return unreachable
}

// checkManifests reads every manifest on disk and CURRENT: each must
// decode, CURRENT must name the newest, and every segment file a manifest
// names must exist with the recorded size (the previous manifest is a
// fallback only while its files are whole).
func (d *DB) checkManifests() error {
	st, err := loadManifests(d.opts.FS, d.dir)
	if err != nil {
		return err
	}
	if len(st.problems) > 0 && !d.unfinished { // (read-only: OpenActions says CURRENT is due)
		return st.problems[0]
	}
	if st.m == nil {
		return &CorruptionError{File: filepath.Join(d.dir, manifestFileName(1)), Err: errNoManifest}
	}
	nums := sortedNums(st.readable)
	for _, num := range nums {
		for _, mc := range st.readable[num].colls {
			for _, ms := range mc.segs {
				path := d.segPath(ms.file)
				fi, err := d.opts.FS.Stat(path)
				if err != nil {
					return &CorruptionError{File: path, Err: fmt.Errorf("named by %s: %w", manifestFileName(num), err)}
				}
				if uint64(fi.Size()) != ms.size {
					return &CorruptionError{File: path, Err: fmt.Errorf("size %d, %s says %d", fi.Size(), manifestFileName(num), ms.size)}
				}
			}
		}
	}
	return nil
}

// unusableFallback returns the first manifest besides the newest readable
// one (a fallback, which Open uses when the newest is damaged) that can no
// longer be used, and why: a segment file it names is missing or has
// another size, or a WAL segment its replay needs is gone (from the one
// its flush rolled to, which was created before it and which truncation
// never removes while the manifest is kept, to the newest). The error is a
// *CorruptionError naming the missing file; Repair drops such a fallback,
// losing nothing.
func unusableFallback(fsys FS, dir string, st *manifestState) (uint64, error) {
	walDir := filepath.Join(dir, "wal")
	segs, _, err := wal.ListSegments(fsys, walDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("engine: %w", err)
	}
	have := map[uint32]bool{}
	newest := uint32(0)
	for _, s := range segs {
		have[s] = true
		newest = max(newest, s)
	}
	for _, num := range sortedNums(st.readable) {
		fb := st.readable[num]
		if num == st.num || fb.rebuilt {
			continue
		}
		for _, mc := range fb.colls {
			for _, ms := range mc.segs {
				path := filepath.Join(dir, "seg", segName(ms.file))
				if fi, err := fsys.Stat(path); err != nil || uint64(fi.Size()) != ms.size {
					return num, &CorruptionError{File: path, Err: fmt.Errorf("missing or resized, though the fallback manifest %s names it", manifestFileName(num))}
				}
			}
		}
		// A manifest written before flushes named the segment they roll to
		// needs only the segments after its checkpoint's, which
		// truncation may already have removed when nothing followed.
		from, last := fb.walSeg, newest
		if from == 0 {
			from = wal.LSN(fb.checkpoint).Segment() + 1
		} else {
			last = max(newest, from)
		}
		for s := max(from, 1); s <= last; s++ {
			if !have[s] {
				return num, &CorruptionError{File: filepath.Join(walDir, fmt.Sprintf("%08d", s)),
					Err: fmt.Errorf("missing: the fallback manifest %s replays the WAL from %08d on (the writes after its checkpoint %v), "+
						"so it can no longer be used; `memctl repair` drops it, losing nothing", manifestFileName(num), from, wal.LSN(fb.checkpoint))}
			}
		}
	}
	return 0, nil
}

// CheckReport is what CheckDir found besides damage.
type CheckReport struct {
	// Actions are what opening the store for writing would do to its
	// files besides reading them (DB.OpenActions of a read-only open),
	// none of it damage: cut a torn WAL tail, set aside files that only
	// look like the store's, remove leftovers of a flush that did not
	// finish, flush the WAL records written after the last flush.
	Actions []string `json:"actions"`
	// Unknown lists the entries the engine did not write (UnknownFiles).
	Unknown []string `json:"unknown_files"`
}

// CheckDir checks the closed store in dir without writing to it, like
// fsck -n: it opens it with Options.ReadOnly (the WAL tail replayed into
// memory only; nothing cut, removed, created or flushed; the LOCK file
// taken but not rewritten) and runs Check. The error is what Open or
// Check found (a *CorruptionError, matching ErrCorrupt, for damage; an
// *UnreachableError) or why the store could not be read (ErrLocked while
// a handle holds it, ErrNotStore). The report says what a writable open
// would do and which files are foreign.
func CheckDir(dir string, opts Options, p Progress) (CheckReport, error) {
	opts.ReadOnly = true
	db, err := Open(dir, opts)
	if err != nil {
		return CheckReport{}, err
	}
	rep := CheckReport{Actions: db.OpenActions()}
	err = db.CheckProgress(p)
	u, uerr := unknownFiles(db.opts.FS, db.dir)
	rep.Unknown = u
	if cerr := db.Close(); err == nil {
		err = cmp.Or(uerr, cerr)
	}
	return rep, err
}

func sortedNums[V any](m map[uint64]V) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (c *Collection) check(pc *progressCounter) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	seen := map[string]bool{}
	for id, node := range c.mem.byID {
		if c.mem.recs[node].dead || c.mem.recs[node].rec.ID != id {
			return fmt.Errorf("engine: collection %q: memtable id map broken at %q", c.cfg.Name, id)
		}
		seen[id] = true
	}
	var unreachable error // reported after every other check passed
	for _, s := range c.segs {
		var ue *UnreachableError
		if err := s.check(); errors.As(err, &ue) {
			unreachable = cmp.Or(unreachable, err)
		} else if err != nil {
			return err
		}
		for node := uint32(0); node < uint32(s.n); node++ {
			if node%1024 == 1023 {
				pc.add(1024)
			}
			if s.isDeleted(node) {
				continue
			}
			id := s.id(node)
			if seen[id] {
				return &CorruptionError{File: s.sf.path, Err: fmt.Errorf("record %q is live in two places", id)}
			}
			seen[id] = true
			if got, ok := s.find(id); !ok || got != node {
				return &CorruptionError{File: s.sf.path, Err: fmt.Errorf("id map does not find %q at node %d", id, node)}
			}
		}
		pc.add(int64(s.n % 1024))
	}
	return unreachable
}
