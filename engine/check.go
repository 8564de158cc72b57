package engine

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/engramdb/engram/internal/vfs"
	"github.com/engramdb/engram/wal"
)

// Check verifies the store: every segment's section checksums, id map
// (sorted, valid, unique across the collection), metadata, texts and
// vectors, the BM25 sections, and the manifest on disk against the files
// (each named file exists with the recorded size). It returns the first
// problem, a *CorruptionError naming the file where one is damaged; when
// every file is intact but a segment's graph does not reach all its live
// records (a full walk from the entry point), an *UnreachableError. It
// holds the write lock, so writers wait while it runs.
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
		return &CorruptionError{File: path, Err: walSegmentDamage(d.opts.FS, path, seg)}
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
	if len(st.problems) > 0 {
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

// Backup writes a consistent copy of the store into dir, which must not
// exist or be empty: it flushes, then copies the segment files and writes a
// manifest for them (with an empty WAL). Writers wait while it runs;
// readers do not.
func (d *DB) Backup(dir string) error {
	if inside, err := within(dir, d.dir); err != nil {
		return fmt.Errorf("engine: backup: %w", err)
	} else if inside {
		return fmt.Errorf("%w: backup target %s is inside the store %s", ErrInvalid, dir, d.dir)
	}
	if fresh, err := inspectDir(d.opts.FS, dir); err != nil {
		return err
	} else if !fresh {
		return fmt.Errorf("%w: backup target %s already holds a store", ErrExists, dir)
	}
	if entries, err := d.opts.FS.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%w: backup target %s is not empty", ErrExists, dir)
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if err := d.flushLocked(nil); err != nil {
		return err
	}
	fsys := d.opts.FS
	if err := mkdirDurable(fsys, filepath.Join(dir, "seg")); err != nil {
		return fmt.Errorf("engine: backup: %w", err)
	}
	m := d.manifestLocked(nil, nil)
	m.checkpoint = 0 // the copy starts a new WAL
	for _, mc := range m.colls {
		for _, ms := range mc.segs {
			if err := copyFile(fsys, d.segPath(ms.file), filepath.Join(dir, "seg"), segName(ms.file)); err != nil {
				return fmt.Errorf("engine: backup: %w", err)
			}
		}
	}
	if err := fsys.SyncDir(filepath.Join(dir, "seg")); err != nil {
		return fmt.Errorf("engine: backup: %w", err)
	}
	if err, curErr := writeManifest(fsys, dir, 1, m); err != nil || curErr != nil {
		return fmt.Errorf("engine: backup: %w", errors.Join(err, curErr))
	}
	return nil
}

func copyFile(fsys FS, src, dir, name string) error {
	f, err := fsys.OpenFile(src, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return writeAtomic(fsys, dir, name, func(w io.Writer) error {
		_, err := io.Copy(w, io.NewSectionReader(f, 0, st.Size()))
		return err
	})
}

// Stats describes the store.
type Stats struct {
	Collections []CollectionStats
	WALBytes    int64
	// MemBytes estimates the mutable parts' size (the flush threshold).
	MemBytes int64
	// BackgroundError is the error of the last background flush or
	// compaction; nil once one succeeds (after a full disk cleared, say).
	BackgroundError error
}

// CollectionStats describes one collection.
type CollectionStats struct {
	Name        string
	Records     int   // live records
	Mutable     int   // live records not yet flushed
	Segments    int   // segment files
	Deleted     int   // deleted or overwritten records still in segments
	DiskBytes   int64 // segment file bytes
	Overrides   int   // access statistics held in the manifest
	Broken      error
	Fingerprint string
}

// Stats reports counts and sizes.
func (d *DB) Stats() Stats {
	var st Stats
	d.mu.RLock()
	colls := make([]*Collection, 0, len(d.colls))
	for _, name := range sortedKeys(d.colls) {
		colls = append(colls, d.colls[name])
	}
	d.mu.RUnlock()
	for _, c := range colls {
		c.mu.RLock()
		cs := CollectionStats{Name: c.cfg.Name, Broken: c.broken, Fingerprint: c.cfg.Fingerprint, Overrides: len(c.overrides)}
		if !c.dropped {
			cs.Mutable = c.mem.live
			cs.Records = c.mem.live
			for _, s := range c.segs {
				cs.Segments++
				cs.Records += s.live()
				cs.Deleted += s.ndel
				cs.DiskBytes += int64(len(s.sf.data))
			}
		}
		c.mu.RUnlock()
		st.Collections = append(st.Collections, cs)
	}
	walDir := filepath.Join(d.dir, "wal")
	if names, err := d.opts.FS.ReadDir(walDir); err == nil {
		for _, n := range names {
			if info, err := d.opts.FS.Stat(filepath.Join(walDir, n)); err == nil && !info.IsDir() {
				st.WALBytes += info.Size()
			}
		}
	}
	d.writeMu.Lock()
	st.MemBytes = d.memBytes
	d.writeMu.Unlock()
	if p := d.bgErr.Load(); p != nil {
		st.BackgroundError = *p
	}
	return st
}

// within reports whether path is root or lies under it, comparing absolute
// paths with symbolic links resolved (path need not exist yet: its nearest
// existing ancestor is resolved).
func within(path, root string) (bool, error) {
	r, err := resolve(root)
	if err != nil {
		return false, err
	}
	p, err := resolve(path)
	if err != nil {
		return false, err
	}
	rel, err := filepath.Rel(r, p)
	if err != nil {
		return false, nil
	}
	return rel == "." || rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)), nil
}

// resolve returns path absolute, with the symbolic links of its longest
// existing prefix resolved.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var rest []string
	for p := abs; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if filepath.Dir(p) == p {
			return abs, nil
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}

// UnknownFiles lists the entries of the store directory dir, seg/ and wal/
// that the engine does not write, relative to dir and sorted. Open and
// Repair ignore them and never remove them; `memctl check` reports them.
// It reads the OS file system (a store path, open or not, like ReadLock).
func UnknownFiles(dir string) ([]string, error) { return unknownFiles(vfs.OS, dir) }

// unknownFiles is UnknownFiles on fsys.
func unknownFiles(fsys FS, dir string) ([]string, error) {
	var out []string
	for _, sub := range []string{"", "seg", "wal"} {
		names, err := fsys.ReadDir(filepath.Join(dir, sub))
		if errors.Is(err, fs.ErrNotExist) && sub != "" {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		for _, name := range names {
			fi, err := fsys.Stat(filepath.Join(dir, sub, name))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("engine: %w", err)
			}
			// A dangling link counts as a file.
			if isDir := err == nil && fi.IsDir(); !knownName(sub, name, isDir) {
				out = append(out, filepath.Join(sub, name))
			}
		}
	}
	return out, nil
}

// knownName reports whether the entry name (a directory if isDir) of the
// store subdirectory sub ("" for the root) is one the engine writes.
func knownName(sub, name string, isDir bool) bool {
	switch sub {
	case "":
		switch name {
		case "seg", "wal":
			return isDir
		case "LOCK":
			return !isDir
		}
		base := strings.TrimSuffix(name, ".tmp")
		_, isManifest := parseManifestName(base)
		return !isDir && (isManifest || base == currentName)
	case "seg":
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, ".tmp"), quarantineSuffix), lostSuffix)
		return !isDir && isSegName(base)
	default: // wal
		return !isDir && wal.IsSegmentName(strings.TrimSuffix(name, ".tmp")) // (.tmp: a segment being created)
	}
}
