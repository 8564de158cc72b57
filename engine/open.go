package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/internal/crypt"
	"github.com/engramdb/engram/internal/vfs"
	"github.com/engramdb/engram/quant"
	"github.com/engramdb/engram/wal"
)

// Options configure Open. The zero value means the documented defaults.
type Options struct {
	// FS is the file system writes go through; nil means the OS. See FS.
	FS FS
	// UnsafeNoSync acknowledges writes once they are handed to the OS,
	// without fsync: they survive a process crash, not a power loss or
	// kernel crash. For tests and bulk loads.
	UnsafeNoSync bool
	// NamespaceField is the metadata field whose equality filters are
	// served by per-segment postings. Default "session".
	NamespaceField string
	// FlushBytes is the estimated size of the mutable parts (all
	// collections) at which a background flush starts. Default 64 MiB;
	// negative: only explicit Flush calls.
	FlushBytes int64
	// CompactInterval is how often the background loop looks for
	// segments worth compacting. Default 30s; negative disables it.
	CompactInterval time.Duration
	// CompactBytesPerSec caps the write rate of background compaction.
	// Default 64 MiB/s; negative: unlimited.
	CompactBytesPerSec int64
	// VerifyOnOpen checks every segment section's checksum at Open (a full
	// read of the data) instead of only in Check.
	VerifyOnOpen bool
	// M and EfConstruction tune the HNSW graphs (0: hnsw defaults).
	M, EfConstruction int
	// ReadOnly opens the store without writing to it, as `memctl check`
	// does (like fsck -n): the WAL tail is replayed into memory only; a
	// torn WAL tail is not cut, stale files are not removed, files that
	// only look like the store's are not set aside, nothing is created
	// (a directory without a store is ErrNotStore), the LOCK file's text is
	// left as it is (the lock is still taken; a missing LOCK file is
	// created empty) and Close flushes nothing. OpenActions says what a
	// writable Open would do. Mutations, Flush, Compact, Backup and
	// SetLockNote return ErrReadOnly.
	ReadOnly bool
	// Warm has Open start a background pass that verifies and maps what
	// searches read in every segment (the graph but its float vectors;
	// ids, columns, times, text, keyword and namespace sections) and
	// readies a search's scratch per CPU, so that the first searches
	// after open do not pay for it (a fresh process
	// at 1M x 1024-d: recall p99 11-15 ms cold, 7 ms warm). It reads
	// about 1.2 KiB per record from one goroutine, in steps that a
	// search, a flush or Close never waits on for long; DB.Warmed says
	// when it is done. For long-running processes (memctl serve).
	Warm bool
	// Key makes a new store encrypted (docs/format/encryption.md), and
	// unlocks an encrypted one: nil for a plaintext store. Encryption is
	// chosen when the store is created: a store without KEYS opened with
	// a Key is ErrInvalid, one with KEYS opened without is
	// ErrKeyRequired, with a wrong one ErrWrongKey; none of them writes
	// anything.
	Key *Key
	// Logger receives warnings about what Open repairs or sets aside by
	// itself (a torn WAL tail cut, a file named like a WAL segment that is
	// not one); nil discards them. OpenActions lists them too.
	Logger *slog.Logger

	// walSegSize is the WAL segment size (0: walSegmentSize); tests on a
	// MemFS make it small, as every segment is preallocated in memory.
	walSegSize int64
}

func (o Options) withDefaults() Options {
	if o.FS == nil {
		o.FS = vfs.OS
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.walSegSize == 0 {
		o.walSegSize = walSegmentSize
	}
	if o.NamespaceField == "" {
		o.NamespaceField = "session"
	}
	if o.FlushBytes == 0 {
		o.FlushBytes = 64 << 20
	}
	if o.CompactInterval == 0 {
		o.CompactInterval = 30 * time.Second
	}
	if o.CompactBytesPerSec == 0 {
		o.CompactBytesPerSec = 64 << 20
	}
	return o
}

// Open opens the store in dir, creating it (mode 0700) if dir does not
// exist or is empty. A directory holding anything else fails with
// ErrNotStore, a store written by a newer version with ErrVersion, a store
// held by another handle with ErrLocked; none of these write anything.
func Open(dir string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	// Check the graph options now: a collection built with them later must
	// never fail after its creation is in the WAL.
	if _, err := hnsw.New(hnsw.Config{Dim: 1, Metric: quant.L2, M: opts.M, EfConstruction: opts.EfConstruction}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	dir = filepath.Clean(dir)
	fresh, err := inspectDir(opts.FS, dir)
	if err != nil {
		return nil, err
	}
	if fresh && opts.ReadOnly {
		return nil, fmt.Errorf("%w: %s holds no store (a read-only open creates none)", ErrNotStore, dir)
	}
	if !opts.ReadOnly {
		if err := mkdirDurable(opts.FS, dir); err != nil {
			return nil, fmt.Errorf("engine: create %s: %w", dir, err)
		}
	}
	// The key is checked before anything is written (the lock file).
	keys, err := loadKeys(opts.FS, dir, opts.Key, fresh)
	if err != nil {
		return nil, err
	}
	lock, err := lockDir(opts.FS, filepath.Join(dir, "LOCK"), opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	d := &DB{keys: keys, dir: dir, opts: opts, lock: lock, colls: map[string]*Collection{}, kv: map[string][]byte{},
		flushSignal: make(chan struct{}, 1), compactSignal: make(chan struct{}, 1), bgDone: make(chan struct{})}
	if keys != nil || opts.Key != nil {
		// From here on the store's segment files are sealed and
		// unsealed with its keys (after lockDir, which wants the
		// caller's FS).
		d.keyRef.Store(keys)
		d.opts.FS = keyedFS{FS: d.opts.FS, keys: &d.keyRef}
	}
	if err := d.open(fresh); err != nil {
		d.closeFiles()
		lock.unlock()
		return nil, err
	}
	d.startSeq()
	d.warmDone = make(chan struct{})
	if opts.Warm {
		go d.warm()
	} else {
		close(d.warmDone)
	}
	if opts.ReadOnly {
		close(d.bgDone) // nothing to flush or compact
	} else {
		go d.background()
	}
	return d, nil
}

// OpenActions lists what Open did to the store's files besides reading
// them (cut a torn WAL tail, set aside files that only look like the
// store's, removed leftovers of an unfinished flush, finished the store's
// creation), one sentence each; with Options.ReadOnly, what a writable
// Open would do instead, and the WAL records it replayed into memory that
// a writable handle flushes when it closes.
func (d *DB) OpenActions() []string { return slices.Clone(d.actions) }

// act records something Open did (the verb did, then what), or,
// read-only, would do (would do, what).
func (d *DB) act(did, do, format string, a ...any) {
	verb := did
	if d.opts.ReadOnly {
		verb = "would " + do
	}
	d.actions = append(d.actions, verb+" "+fmt.Sprintf(format, a...))
}

// inspectDir reports whether dir is a new store (absent, empty, or holding
// only what a crashed creation leaves) and refuses foreign directories.
func inspectDir(fsys FS, dir string) (fresh bool, err error) {
	st, err := fsys.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("engine: %w", err)
	}
	if !st.IsDir() {
		return false, fmt.Errorf("%w: %s is not a directory", ErrNotStore, dir)
	}
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("engine: %w", err)
	}
	hasManifest := false
	var foreign []string
	for _, e := range entries {
		name := strings.TrimSuffix(e, ".tmp")
		if _, ok := parseManifestName(name); ok || name == currentName {
			hasManifest = hasManifest || name == e
			continue
		}
		switch e {
		case "LOCK", "seg", "wal", keysName, keysName + ".tmp":
		default:
			foreign = append(foreign, e)
		}
	}
	if !hasManifest && len(foreign) > 0 {
		return false, fmt.Errorf("%w: %s has no MANIFEST and holds %q", ErrNotStore, dir, foreign[0])
	}
	if !hasManifest {
		// A crashed creation leaves at most LOCK and a manifest
		// temporary: the manifest is written before seg/ and wal/ are
		// made. Data there without a manifest is a store that lost it,
		// never a new one.
		for _, sub := range []string{"seg", "wal"} {
			if names, err := fsys.ReadDir(filepath.Join(dir, sub)); err == nil && len(names) > 0 {
				return false, &CorruptionError{File: filepath.Join(dir, manifestFileName(1)),
					Err: fmt.Errorf("no manifest, but %s/ holds data: run `memctl repair`", sub)}
			}
		}
	}
	return !hasManifest, nil
}

func (d *DB) open(fresh bool) error {
	fsys := d.opts.FS
	if fresh && d.opts.Key != nil && d.keys == nil {
		// KEYS comes first: a directory holding only it (and LOCK) is
		// a creation that crashed, created again with the same key.
		keys := crypt.New()
		keys.SetFlags(crypt.FlagSealedManifests)
		if err := writeKeys(fsys, d.dir, keys, d.opts.Key); err != nil {
			return fmt.Errorf("engine: create %s: %w", keysName, err)
		}
		d.setKeys(keys)
	}
	if fresh {
		m := &manifest{nextFile: 1, kv: map[string][]byte{}}
		if err, _ := writeManifest(fsys, d.dir, 1, m); err != nil {
			return err
		}
	}
	st, err := loadManifests(fsys, d.dir)
	if err != nil {
		return err
	}
	if finished, err := d.finishCreation(st); err != nil {
		return err
	} else if finished && !d.opts.ReadOnly {
		if st, err = loadManifests(fsys, d.dir); err != nil {
			return err
		}
	}
	if st.m == nil {
		return &CorruptionError{File: filepath.Join(d.dir, manifestFileName(max(st.maxNum, 1))), Err: errNoManifest}
	}
	m := st.m
	d.nextFile, d.checkpoint, d.lastLSN, d.kv = m.nextFile, wal.LSN(m.checkpoint), wal.LSN(m.checkpoint), m.kv
	d.manNum, d.manMax, d.manProblems = st.num, st.maxNum, st.problems
	d.prevFiles, d.keepFrom = st.keepFiles(), wal.LSN(st.oldestCheckpoint())
	cur := m.files()
	for _, f := range sortedNums(d.prevFiles) {
		if !cur[f] {
			d.pendingRemove = append(d.pendingRemove, f) // only an older manifest names it
		}
	}
	d.lenient = m.rebuilt
	if !d.opts.ReadOnly {
		if err := mkdirDurable(fsys, d.segDir()); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	}
	if err := d.removeUnreferenced(st); err != nil {
		return err
	}
	for _, mc := range m.colls {
		c, err := newCollection(d, mc.cfg)
		if err != nil {
			return err
		}
		c.overrides = mc.overrides
		for _, ms := range mc.segs {
			s, err := openSegment(d.opts.FS, d.segPath(ms.file), ms.file, mc.cfg, ms.count, d.opts.VerifyOnOpen)
			if err != nil {
				c.broken = err
				break
			}
			for _, node := range ms.deleted {
				s.markDeleted(node)
			}
			c.segs = append(c.segs, s)
		}
		if c.broken != nil {
			// Keep the collection's files and manifest entry (so the
			// data can be restored) but serve nothing from it.
			c.brokenMan = mc
			for _, s := range c.segs {
				s.close()
			}
			c.segs = nil
		}
		d.colls[mc.cfg.Name] = c
	}
	syncMode := wal.Always
	if d.opts.UnsafeNoSync {
		syncMode = wal.UnsafeNoSync
	}
	walDir := filepath.Join(d.dir, "wal")
	if err := checkWALReaches(fsys, walDir, m); err != nil {
		return err
	}
	// The log makes its directory, but syncs only the files in it.
	if !d.opts.ReadOnly {
		if err := mkdirDurable(fsys, walDir); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	}
	d.log, err = wal.Open(walDir, wal.Options{FS: fsys, Sync: syncMode, SegmentSize: d.opts.walSegSize,
		IgnoreBefore: walIgnoreBefore(m), OwnDir: true, ReadOnly: d.opts.ReadOnly, Logger: d.opts.Logger})
	if err != nil {
		return fmt.Errorf("engine: open WAL: %w", walCorruption(d.dir, err))
	}
	rec := d.log.Recovery()
	for _, sa := range rec.SetAside {
		switch {
		case sa.NewName != "":
			d.act("set aside", "set aside", "wal/%s as wal/%s: named like a WAL segment, but not one", sa.Name, sa.NewName)
		case d.opts.ReadOnly:
			d.act("set aside", "set aside", "wal/%s: named like a WAL segment, but not one", sa.Name)
		default:
			d.actions = append(d.actions, fmt.Sprintf("left wal/%s in place: a directory named like a WAL segment, never read as one", sa.Name))
		}
	}
	if tt := rec.TornTail; tt.Segment != 0 {
		d.act("cut", "cut", "the torn tail of wal/%08d at offset %d (an append that never completed, so was never acknowledged)", tt.Segment, tt.From)
	}
	for _, h := range d.log.Holes() {
		if h > d.checkpoint {
			// Repair gave up WAL records after the checkpoint and kept the
			// later ones: an op may name a collection whose creation was
			// lost. Skip those (counted) rather than refuse the rest.
			d.lenient = true
		}
	}
	if d.log.LastLSN() <= d.checkpoint {
		// Everything in the log is already in the segments.
		if d.opts.ReadOnly {
			return nil
		}
		if err := d.truncateWAL(); err != nil {
			return fmt.Errorf("engine: truncate WAL: %w", err)
		}
		return nil
	}
	replayed := 0
	defer func() {
		if replayed > 0 && d.opts.ReadOnly {
			d.actions = append(d.actions, fmt.Sprintf("%d WAL records written after the last flush were replayed in memory only; "+
				"a writable open replays them too and, when it closes, flushes them into a segment file and a new manifest "+
				"(removing what only the previous manifest needed)", replayed))
		}
	}()
	err = d.log.Replay(replayFrom(m), func(lsn wal.LSN, rec []byte) error {
		var ops []*walOp
		if d.keys != nil {
			var skipped int
			ops, skipped, err = d.openOps(lsn, rec)
			d.purgedParts += skipped
		} else {
			var o *walOp
			o, err = decodeOp(rec)
			ops = []*walOp{o}
		}
		if err != nil {
			return &CorruptionError{File: filepath.Join(d.dir, "wal"), Err: fmt.Errorf("WAL record %v: %w", lsn, err)}
		}
		for _, o := range ops {
			if err := d.apply(o); err != nil {
				// A logged op the state cannot take (an op on a collection
				// the manifest does not know) is damage too: the log and the
				// manifest disagree.
				return &CorruptionError{File: filepath.Join(d.dir, "wal"), Err: fmt.Errorf("WAL record %v: %w", lsn, err)}
			}
		}
		d.lastLSN = lsn
		replayed++
		return nil
	})
	if err != nil {
		return fmt.Errorf("engine: replay: %w", walCorruption(d.dir, err))
	}
	d.lenient = false
	return nil
}

// replayFrom is where replaying the WAL over m starts: after its
// checkpoint, and not before the segment m says follows it (a flush rolls
// the log to a new segment before writing its manifest, so no record after
// the checkpoint lies before that segment, which only the fallback
// manifest needs and may be gone).
func replayFrom(m *manifest) wal.LSN {
	from := wal.LSN(m.checkpoint) + 1
	if s := walIgnoreBefore(m); s != 0 {
		from = max(from, wal.LSN(uint64(s)<<32))
	}
	return from
}

// walIgnoreBefore is the first WAL segment that may hold a record after
// m's checkpoint: the ones before it are only a fallback manifest's, so
// damage there must not block opening.
func walIgnoreBefore(m *manifest) uint32 {
	if m.rebuilt {
		return 0 // the whole log is replayed
	}
	if m.walSeg != 0 {
		return m.walSeg
	}
	return wal.LSN(m.checkpoint).Segment()
}

// checkWALReaches refuses a WAL that ends before the segment m says exists
// (the one after its checkpoint, or the checkpoint's own for manifests
// that do not name it): the segments holding the acknowledged writes after
// the checkpoint are missing, which is corruption, not a clean end (and an
// empty log would start over at segment 1, below the checkpoint). It reads
// the directory only.
func checkWALReaches(fsys FS, dir string, m *manifest) error {
	need := max(m.walSeg, wal.LSN(m.checkpoint).Segment())
	if need == 0 || m.rebuilt {
		return nil
	}
	segs, _, err := wal.ListSegments(fsys, dir) // (not files that only look like segments)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("engine: %w", err)
	}
	newest := uint32(0)
	for _, seg := range segs {
		newest = max(newest, seg)
	}
	if newest >= need {
		return nil
	}
	return &CorruptionError{File: filepath.Join(dir, fmt.Sprintf("%08d", need)),
		Err: fmt.Errorf("missing: the manifest says the WAL reaches it (the writes after its checkpoint %v); run `memctl repair`", wal.LSN(m.checkpoint))}
}

// walCorruption wraps a *wal.CorruptionError in a *CorruptionError (so it
// matches ErrCorrupt; errors.As still finds the wal error inside).
func walCorruption(dir string, err error) error {
	var we *wal.CorruptionError
	var ce *CorruptionError
	if errors.As(err, &we) && !errors.As(err, &ce) {
		return &CorruptionError{File: filepath.Join(dir, "wal"), Err: err}
	}
	return err
}

// finishCreation writes the CURRENT that a power loss (or a failed write)
// cut off while the store was created: the store's only manifest is the
// first, empty one, and nothing names it. Every later manifest is written
// once CURRENT names the first, so no other state looks like this, and the
// pointer it restores is the one Open follows anyway: nothing is lost and
// no damage is hidden. Without it Check would report a store that merely
// crashed while being created as corrupt until the first flush.
func (d *DB) finishCreation(st *manifestState) (bool, error) {
	if !creationUnfinished(d.opts.FS, d.dir, st) {
		return false, nil
	}
	if d.opts.ReadOnly {
		d.unfinished = true
		d.act("wrote", "write", "CURRENT naming %s: the store's creation stopped before it", manifestFileName(1))
		return true, nil
	}
	if err := writeFileAtomic(d.opts.FS, d.dir, currentName, []byte(manifestFileName(1)+"\n")); err != nil {
		return false, fmt.Errorf("engine: write CURRENT: %w", err)
	}
	return true, nil
}

// creationUnfinished reports whether st is a store whose creation stopped
// before CURRENT (see finishCreation).
func creationUnfinished(fsys FS, dir string, st *manifestState) bool {
	if st.num != 1 || st.maxNum != 1 || len(st.readable) != 1 || len(st.problems) != 1 {
		return false
	}
	if m := st.m; len(m.colls) > 0 || len(m.kv) > 0 || m.checkpoint != 0 || m.rebuilt {
		return false
	}
	_, err := fsys.Stat(filepath.Join(dir, currentName))
	return errors.Is(err, fs.ErrNotExist) // present but damaged: Check reports it
}

// removeUnreferenced deletes segment files no readable manifest names:
// temporaries and files of a flush or compaction that crashed before its
// manifest, or superseded before a crash. Only names the engine writes
// (NNNNNNNN.seg and NNNNNNNN.seg.tmp) are touched, and of NNNNNNNN.seg
// only files that are segment files (they start with the segment magic:
// the engine renames a segment into place only once it is whole); anything
// else in seg/ is left alone (Check reports it). While a manifest is
// damaged nothing but temporaries goes: what it named is unknown. Segment
// numbers continue above every file present, so no file is ever
// overwritten. Read-only, it only records what it would remove.
func (d *DB) removeUnreferenced(st *manifestState) error {
	keep := st.keepFiles()
	names, err := d.opts.FS.ReadDir(d.segDir())
	if err != nil && !(d.opts.ReadOnly && errors.Is(err, fs.ErrNotExist)) {
		return fmt.Errorf("engine: %w", err)
	}
	removed := false
	for _, n := range names {
		base, tmp := strings.CutSuffix(n, ".tmp")
		if !isSegName(base) {
			continue
		}
		file, _ := strconv.ParseUint(strings.TrimSuffix(base, ".seg"), 10, 64)
		d.nextFile = max(d.nextFile, file+1)
		path := filepath.Join(d.segDir(), n)
		if keep[file] || !tmp && len(st.problems) > 0 || !tmp && !hasSegMagic(d.opts.FS, path) {
			continue
		}
		d.act("removed", "remove", "seg/%s: no manifest names it (left by a flush or compaction that did not finish, or superseded)", n)
		if d.opts.ReadOnly {
			continue
		}
		if err := d.opts.FS.Remove(path); err != nil {
			return fmt.Errorf("engine: remove stale %s: %w", n, err)
		}
		removed = true
	}
	if entries, err := d.opts.FS.ReadDir(d.dir); err == nil {
		for _, n := range entries {
			if base, ok := strings.CutSuffix(n, ".tmp"); ok {
				if _, isMan := parseManifestName(base); isMan || base == currentName {
					d.act("removed", "remove", "%s: a temporary of a manifest write that did not finish", n)
					if !d.opts.ReadOnly {
						_ = d.opts.FS.Remove(filepath.Join(d.dir, n))
					}
				}
			}
		}
	}
	if removed {
		return d.opts.FS.SyncDir(d.segDir())
	}
	return nil
}
