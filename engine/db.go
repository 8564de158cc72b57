package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engramdb/engram/internal/crypt"
	"github.com/engramdb/engram/wal"
)

// MaxBatchBytes bounds one write (an Upsert batch encodes its vectors as
// float32, ~4 KiB per 1024-d record, plus texts and metadata).
const MaxBatchBytes = 4 << 20

// walSegmentSize keeps WAL segments small: Open checksums the whole active
// segment, already-flushed records included, and a flush can only delete
// whole segments; so this bounds the WAL work at Open.
const walSegmentSize = 2 * MaxBatchBytes

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

	// keys are the data keys of an encrypted store (nil: plaintext);
	// replaced, never changed, under writeMu when a session key is made
	// or destroyed. walSeq is the sequence of the last sealed WAL record
	// (encryption.md); purgedParts counts replayed parts whose session
	// key was destroyed.
	keys *crypt.Keys
	// keyRef mirrors keys for the segment reads and writes that run
	// without writeMu (opts.FS is a keyedFS reading it; sealedseg.go).
	keyRef      atomic.Pointer[crypt.Keys]
	walSeq      uint64
	purgedParts int

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
	warmDone      chan struct{} // closed when the warm-up (Options.Warm) ends
	bgErr         atomic.Pointer[error]
}

func (d *DB) segDir() string             { return filepath.Join(d.dir, "seg") }
func (d *DB) segPath(file uint64) string { return filepath.Join(d.segDir(), segName(file)) }

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
	if d.keys != nil {
		var err error
		if payload, err = d.sealOp(o); err != nil {
			return err
		}
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

var errCompactionStale = errors.New("engine: compaction superseded (collection dropped or segments changed)")

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
	<-d.warmDone // it stops at its next step once stopping is set
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	err := d.closeFiles()
	return errors.Join(flushErr, err, d.lock.unlock())
}

// collections returns the open collections in name order, a snapshot
// taken under d.mu.
func (d *DB) collections() []*Collection {
	d.mu.RLock()
	defer d.mu.RUnlock()
	colls := make([]*Collection, 0, len(d.colls))
	for _, name := range sortedKeys(d.colls) {
		colls = append(colls, d.colls[name])
	}
	return colls
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
