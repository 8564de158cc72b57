package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/internal/vfs"
	"github.com/engramdb/engram/quant"
	"github.com/engramdb/engram/wal"
)

// MaxBatchBytes bounds one write (an Upsert batch encodes its vectors as
// float32, ~4 KiB per 1024-d record, plus texts and metadata).
const MaxBatchBytes = 4 << 20

// walSegmentSize keeps WAL segments small: Open checksums the whole active
// segment, already-flushed records included, and a flush can only delete
// whole segments; so this bounds the WAL work at Open.
const walSegmentSize = 2 * MaxBatchBytes

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

// DB is an open store. Its methods are safe for concurrent use.
type DB struct {
	dir  string
	opts Options
	lock *dirLock
	log  *wal.Log

	// writeMu serializes every mutation, flush and the install step of
	// compaction; readers never take it.
	writeMu    sync.Mutex
	closed     bool
	nextFile   uint64
	lastLSN    wal.LSN
	checkpoint wal.LSN
	memBytes   int64
	// Segment files superseded in memory: pendingNew since the last
	// manifest (which names them), pendingRemove before it (the previous
	// manifest may name them); removed once no kept manifest does.
	pendingNew    []uint64
	pendingRemove []uint64

	// The manifests on disk: manNum is the current one (the newest that
	// decoded at Open, or the last written), manMax the highest number
	// present. prevFiles are the segment files named by the manifests kept
	// besides the current one, and keepFrom their oldest checkpoint: the
	// WAL after it stays, so each of them is a complete fallback.
	manNum, manMax uint64
	prevFiles      map[uint64]bool
	keepFrom       wal.LSN
	manProblems    []error // damage loadManifests found at Open; cleared by the next manifest
	prevManifest   uint64  // number of the fallback manifest kept besides manNum
	// cleanupErr is CURRENT's failed write for manifest manNum: CURRENT
	// may still name a manifest older than the fallback, so the cleanup
	// rewrites it before removing any manifest, and removes nothing
	// (returning this error) while it cannot.
	cleanupErr error

	// lenient is set while replaying the WAL over a rebuilt manifest: an
	// op on an unknown collection is skipped (counted in replaySkipped),
	// and a create with another config replaces the collection.
	lenient       bool
	replaySkipped int

	// actions are what Open did to the files besides reading them (with
	// ReadOnly: what it would do); see OpenActions.
	actions []string
	// unfinished: the store's creation stopped before CURRENT, which a
	// writable Open writes (finishCreation); a read-only one leaves it.
	unfinished bool

	// mu guards colls and kv for readers; writers change them holding both.
	mu    sync.RWMutex
	colls map[string]*Collection
	kv    map[string][]byte

	noCloseFlush bool // tests: leave the WAL to be replayed, as after a crash

	compactMu   sync.Mutex // one compaction at a time; Close waits for it
	stopping    atomic.Bool
	flushSignal chan struct{}
	// compactSignal asks the background loop for the policy's compaction
	// now (a delete left a segment mostly deleted) instead of at its tick.
	compactSignal chan struct{}
	bgDone        chan struct{}
	bgErr         atomic.Pointer[error]
}

func (d *DB) segDir() string             { return filepath.Join(d.dir, "seg") }
func (d *DB) segPath(file uint64) string { return filepath.Join(d.segDir(), segName(file)) }

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
	lock, err := lockDir(opts.FS, filepath.Join(dir, "LOCK"), opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	d := &DB{dir: dir, opts: opts, lock: lock, colls: map[string]*Collection{}, kv: map[string][]byte{},
		flushSignal: make(chan struct{}, 1), compactSignal: make(chan struct{}, 1), bgDone: make(chan struct{})}
	if err := d.open(fresh); err != nil {
		d.closeFiles()
		lock.unlock()
		return nil, err
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

// rel is path relative to the store directory, for messages.
func (d *DB) rel(path string) string {
	if r, err := filepath.Rel(d.dir, path); err == nil {
		return r
	}
	return path
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
		case "LOCK", "seg", "wal":
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
		o, err := decodeOp(rec)
		if err != nil {
			return &CorruptionError{File: filepath.Join(d.dir, "wal"), Err: fmt.Errorf("WAL record %v: %w", lsn, err)}
		}
		if err := d.apply(o); err != nil {
			// A logged op the state cannot take (an op on a collection
			// the manifest does not know) is damage too: the log and the
			// manifest disagree.
			return &CorruptionError{File: filepath.Join(d.dir, "wal"), Err: fmt.Errorf("WAL record %v: %w", lsn, err)}
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

// logAndApply makes o durable in the WAL, then applies it. The caller
// holds writeMu and has validated o completely.
func (d *DB) logAndApply(o *walOp) error {
	if d.closed {
		return ErrClosed
	}
	if d.opts.ReadOnly {
		return ErrReadOnly
	}
	payload := encodeOp(o)
	if len(payload) > MaxBatchBytes {
		return fmt.Errorf("%w: batch encodes to %d bytes, limit %d; split it", ErrInvalid, len(payload), MaxBatchBytes)
	}
	lsn, err := d.log.Append(payload)
	if err != nil {
		return fmt.Errorf("engine: write-ahead log: %w", err)
	}
	d.lastLSN = lsn
	if err := d.apply(o); err != nil {
		return fmt.Errorf("engine: apply logged op: %w", err)
	}
	if d.opts.FlushBytes > 0 && d.memBytes >= d.opts.FlushBytes {
		select {
		case d.flushSignal <- struct{}{}:
		default:
		}
	}
	return nil
}

// CreateCollection creates a collection. If one with the same name exists
// with an identical config it is returned; with another config the error
// wraps ErrExists.
func (d *DB) CreateCollection(cfg CollectionConfig) (*Collection, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if c, ok := d.colls[cfg.Name]; ok {
		if c.cfg != cfg {
			return nil, fmt.Errorf("%w: collection %q has dim %d, %v, fingerprint %q", ErrExists, cfg.Name, c.cfg.Dim, c.cfg.Metric, c.cfg.Fingerprint)
		}
		return c, c.usable()
	}
	if err := d.logAndApply(&walOp{op: walCreate, cfg: cfg}); err != nil {
		return nil, err
	}
	return d.colls[cfg.Name], nil
}

// Collection returns the named collection: ErrNotFound when there is none,
// a *CorruptionError when its segment files are damaged.
func (d *DB) Collection(name string) (*Collection, error) {
	d.mu.RLock()
	c, ok := d.colls[name]
	d.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: collection %q", ErrNotFound, name)
	}
	if c.broken != nil {
		return nil, c.broken
	}
	return c, nil
}

// Collections returns the configs of all collections, sorted by name.
func (d *DB) Collections() []CollectionConfig {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]CollectionConfig, 0, len(d.colls))
	for _, c := range d.colls {
		out = append(out, c.cfg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DropCollection deletes a collection and, after the next flush, its files.
// It also works on a collection whose files are damaged.
func (d *DB) DropCollection(name string) error {
	// A running compaction may be reading the collection's segments:
	// ask it to stop and wait for it before they are closed.
	d.mu.RLock()
	c, ok := d.colls[name]
	d.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: collection %q", ErrNotFound, name)
	}
	c.abort.Store(true)
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if cur, ok := d.colls[name]; !ok || cur != c {
		return fmt.Errorf("%w: collection %q", ErrNotFound, name)
	}
	return d.logAndApply(&walOp{op: walDrop, coll: name})
}

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
			continue
		}
		file := d.nextFile
		d.nextFile++
		path := d.segPath(file)
		if _, err := writeSegmentFile(d.opts.FS, d.segDir(), segName(file), buildSections(c.cfg, c.mem, d.opts.NamespaceField, segWrite{file: file, lsn: d.lastLSN})); err != nil {
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

var errCompactionStale = errors.New("engine: compaction superseded (collection dropped or segments changed)")

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
			mc.segs = append(mc.segs, manifestSeg{file: s.file, count: uint32(s.n), size: uint64(len(s.sf.data)), deleted: s.deletedList()})
		}
		m.colls = append(m.colls, mc)
	}
	return m
}

// Close stops the background work, flushes the mutable parts (so that the
// next Open has no WAL to replay; on failure the WAL still holds every
// acknowledged write and the error is returned), and releases the files
// and the lock. Unless automatic compaction is off (CompactInterval < 0),
// it first runs the background policy's compaction when one is due, so a
// store used only by short-lived processes (one `memctl remember` each)
// keeps a bounded number of segments; that compaction is best effort (the
// store is whole either way), and a failure of it is not Close's error.
func (d *DB) Close() error {
	if d.opts.CompactInterval > 0 && !d.noCloseFlush && !d.opts.ReadOnly {
		// Flush first, so the policy sees the segment this Close adds.
		if err := d.Flush(); err == nil && d.compactionDue() {
			_ = d.compact(false)
		}
	}
	d.stopping.Store(true)
	d.writeMu.Lock()
	if d.closed {
		d.writeMu.Unlock()
		return ErrClosed
	}
	var flushErr error
	if d.memBytes > 0 && !d.noCloseFlush && !d.opts.ReadOnly {
		flushErr = d.flushLocked(nil)
		var ce *CorruptionError
		if errors.As(flushErr, &ce) {
			flushErr = nil // a damaged collection refuses flushes; the WAL keeps its data
		}
	}
	d.closed = true
	d.writeMu.Unlock()
	close(d.flushSignal)
	<-d.bgDone
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	err := d.closeFiles()
	return errors.Join(flushErr, err, d.lock.unlock())
}

func (d *DB) closeFiles() error {
	var errs []error
	d.mu.Lock()
	for _, c := range d.colls {
		c.mu.Lock()
		for _, s := range c.segs {
			errs = append(errs, s.close())
		}
		c.segs = nil
		c.dropped = true
		c.mu.Unlock()
	}
	d.mu.Unlock()
	if d.log != nil {
		errs = append(errs, d.log.Close())
	}
	return errors.Join(errs...)
}

// background runs automatic flushes and periodic compaction until Close.
func (d *DB) background() {
	defer close(d.bgDone)
	var tick <-chan time.Time
	if d.opts.CompactInterval > 0 {
		t := time.NewTicker(d.opts.CompactInterval)
		defer t.Stop()
		tick = t.C
	}
	report := func(err error) {
		switch {
		case err == nil:
			d.bgErr.Store(nil) // a full disk that cleared is no longer news
		case !errors.Is(err, ErrClosed) && !errors.Is(err, errCompactionStale) && !errors.Is(err, errStopping):
			d.bgErr.Store(&err)
		}
	}
	for {
		select {
		case _, ok := <-d.flushSignal:
			if !ok {
				return
			}
			report(d.Flush())
		case <-tick:
			report(d.compact(false))
		case <-d.compactSignal:
			report(d.compact(false))
		}
	}
}
