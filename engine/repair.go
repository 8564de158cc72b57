package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/engramdb/engram/wal"
)

// RepairReport says what Repair changed. The zero report means the store
// was healthy and nothing was touched.
type RepairReport struct {
	// WALLost are the stretches of the WAL that Repair gave up: damaged
	// records (overwritten in place with holes, so every intact record
	// after them is kept at its LSN), a truncated or torn end, a missing
	// segment. Their records cannot be named: their bytes are what was
	// destroyed. Empty when the WAL was intact.
	WALLost []WALLoss `json:"wal_lost"`
	// RebuiltSegments are damaged segment files whose intact records
	// Repair wrote into a new segment file (graph, keyword and namespace
	// postings, columns and checksums built afresh), which replaces them.
	RebuiltSegments []string `json:"rebuilt_segments"`
	// QuarantinedSegments are damaged files that lost records, renamed to
	// NAME.corrupt in seg/ (out of the manifest) for inspection. A damaged
	// file that lost nothing is removed once its replacement is live.
	QuarantinedSegments []string `json:"quarantined_segments"`
	// QuarantineFiles are the seg/NAME.lost files holding what is still
	// readable of the lost records (docs/format/quarantine.md).
	QuarantineFiles []string `json:"quarantine_files"`
	// MissingSegments are segment files the manifest named that no longer
	// exist; Repair removed them from the manifest.
	MissingSegments []string `json:"missing_segments"`
	// LostRecords names the records whose primary data (ID, vector, text,
	// metadata, times) was destroyed.
	LostRecords []LostRecord `json:"lost_records"`
	// DroppedRecords counts every live record lost: LostRecords, the
	// records of missing files and those of files too damaged to locate
	// any record in (whose IDs are unknown).
	DroppedRecords int `json:"dropped_records"`
	// DamagedManifests are the manifest files (and CURRENT) that failed to
	// read; Repair wrote a new manifest from the newest readable one (with
	// the WAL since its checkpoint nothing is lost) and removed them.
	DamagedManifests []string `json:"damaged_manifests"`
	// RebuiltManifest: no manifest was readable, so Repair rebuilt one from
	// the segment files (each describes its collection) and replayed the
	// whole WAL over them. Deletes and access counts older than the WAL's
	// first record are lost; so is the KV namespace older than it.
	RebuiltManifest bool `json:"rebuilt_manifest"`
	// MissingWAL are WAL segments the manifest says exist (they hold the
	// writes after its checkpoint) that were gone; Repair created the
	// newest of them empty so the log goes on above every LSN it handed
	// out. What they held is lost.
	MissingWAL []string `json:"missing_wal"`
	// ObsoleteWALRemoved are damaged WAL segments wholly before the
	// checkpoint (their records are all in segment files): Repair deleted
	// them, and every segment before the checkpoint, losing nothing.
	ObsoleteWALRemoved []string `json:"obsolete_wal_removed"`
	// SkippedOps counts WAL records a rebuilt manifest could not apply: ops
	// on a collection whose creation and segments are both gone.
	SkippedOps int `json:"skipped_ops"`
	// UnusableFallback are previous manifests that could no longer serve
	// as a fallback (a segment file they name, or a WAL segment their
	// replay needs, was gone): Repair removed them and the WAL segments
	// only they needed. Nothing is lost; the newest manifest is intact.
	UnusableFallback []string `json:"unusable_fallback"`
	// SetAside are files in wal/ named like WAL segments that are not
	// (wal.ListSegments), renamed to NAME.foreign: never read as the log,
	// never removed. Nothing is lost.
	SetAside []string `json:"set_aside"`
}

// WALLoss is one stretch of the WAL that Repair gave up.
type WALLoss struct {
	// LSN is the position of the first record the stretch may have held;
	// Bytes its length (0 for a damaged segment header only).
	LSN   wal.LSN `json:"lsn"`
	Bytes int64   `json:"bytes"`
	Cause string  `json:"cause"`
	// Saved is the file that keeps the stretch's bytes as Repair found
	// them (wal/NNNNNNNN.OFFSET.lost, docs/format/wal.md); "" when nothing
	// was left (a cut or missing segment).
	Saved string `json:"saved,omitempty"`
}

const quarantineSuffix = ".corrupt"

// Repair makes a damaged, closed store openable again, losing as little as
// possible: it replaces damaged manifests with one written from the newest
// readable manifest, or rebuilds one from seg/ and wal/ when none is
// readable; drops a previous manifest that can no longer be a fallback;
// gives up only the damaged stretches of the WAL (each becomes a hole, so
// every intact record after it is kept at its LSN; a damaged or cut end is
// zero-filled; the bytes given up are kept in wal/NNNNNNNN.OFFSET.lost);
// sets aside files in wal/ that only look like segments; and rebuilds
// every segment that fails its checksums or structure checks: the records
// whose primary data is intact go into a new file with graph, postings and
// columns rebuilt; only records whose primary data was destroyed are
// lost, named in the report and exported (what is readable of them) to
// seg/NAME.lost. It takes the directory lock itself (ErrLocked while the
// store is open). On a healthy store it changes nothing.
func Repair(dir string, opts Options) (RepairReport, error) {
	rep, rebuilt, err := repair(dir, opts)
	if err != nil || !rebuilt {
		return rep, err
	}
	// The rebuilt manifest has no checkpoint: open replays the whole WAL
	// over the segments (leniently), and a flush writes an ordinary
	// manifest, so later opens replay nothing twice.
	db, err := Open(dir, Options{FS: opts.FS, Key: opts.Key, NamespaceField: opts.NamespaceField, FlushBytes: -1, CompactInterval: -1, M: opts.M, EfConstruction: opts.EfConstruction, walSegSize: opts.walSegSize})
	if err != nil {
		return rep, fmt.Errorf("engine: repair: open the rebuilt store: %w", err)
	}
	rep.SkippedOps = db.replaySkipped
	err = db.Flush()
	return rep, errors.Join(err, db.Close())
}

func repair(dir string, opts Options) (rep RepairReport, rebuilt bool, err error) {
	opts = opts.withDefaults()
	dir = filepath.Clean(dir)
	var ce *CorruptionError
	if fresh, err := inspectDir(opts.FS, dir); err != nil && !errors.As(err, &ce) {
		return rep, false, err
	} else if fresh {
		return rep, false, fmt.Errorf("%w: %s has no manifest and no data", ErrNotStore, dir)
	}
	// An encrypted store is repaired only with its key (checked before
	// anything is written): the WAL is replayed after.
	keys, err := loadKeys(opts.FS, dir, opts.Key, false)
	if err != nil {
		return rep, false, err
	}
	lock, err := lockDir(opts.FS, filepath.Join(dir, "LOCK"), false)
	if err != nil {
		return rep, false, err
	}
	defer lock.unlock()
	d := &DB{dir: dir, opts: opts}
	if keys != nil {
		// Sealed segment files are read and rebuilt with the keys.
		d.setKeys(keys)
		opts.FS = keyedFS{FS: opts.FS, keys: &d.keyRef}
		d.opts.FS = opts.FS
	}
	st, err := loadManifests(opts.FS, dir)
	if err != nil {
		return rep, false, err
	}
	changed := false
	m := st.m
	keep := []uint64{st.num} // manifests kept besides the new one
	for _, p := range st.problems {
		var ce *CorruptionError
		if errors.As(p, &ce) {
			rep.DamagedManifests = append(rep.DamagedManifests, ce.File)
		}
		changed = true
	}
	if err := mkdirDurable(opts.FS, d.segDir()); err != nil {
		return rep, false, fmt.Errorf("engine: repair: %w", err)
	}
	if m == nil {
		m, err = d.rebuildManifest(&rep)
		if err != nil {
			return rep, false, err
		}
		rep.RebuiltManifest, rebuilt, keep, changed = true, true, nil, true
	}
	// Files Repair writes are numbered above every file in seg/ (a
	// damaged manifest may have named some above m.nextFile).
	if names, err := opts.FS.ReadDir(d.segDir()); err == nil {
		for _, n := range names {
			if f, ok := segFileNumber(strings.TrimSuffix(strings.TrimSuffix(n, ".tmp"), quarantineSuffix)); ok {
				m.nextFile = max(m.nextFile, f+1)
			}
		}
	}
	segsChanged := false
	var after []func() error // once the manifest naming the rebuilt files is durable
	for ci := range m.colls {
		mc := &m.colls[ci]
		kept := mc.segs[:0:0]
		for _, ms := range mc.segs {
			path := d.segPath(ms.file)
			if _, err := opts.FS.Stat(path); errors.Is(err, fs.ErrNotExist) {
				// Lost: drop it from the manifest so the rest opens.
				rep.MissingSegments = append(rep.MissingSegments, path)
				rep.DroppedRecords += int(ms.count) - len(ms.deleted)
				changed, segsChanged = true, true
				continue
			}
			s, err := openSegment(opts.FS, path, ms.file, mc.cfg, ms.count, true)
			if err == nil {
				for _, node := range ms.deleted {
					s.markDeleted(node)
				}
				err = s.check()
				s.close()
			}
			// An intact file whose graph misses some live nodes keeps its
			// records (compaction rebuilds the graph).
			var ue *UnreachableError
			if errors.As(err, &ue) {
				err = nil
			}
			var ce *CorruptionError
			if err != nil && !errors.As(err, &ce) {
				return rep, false, err // an I/O problem, not damage: change nothing
			}
			if err == nil {
				kept = append(kept, ms)
				continue
			}
			if errors.Is(err, ErrVersion) && !knownSectionSet(opts.FS, path) {
				return rep, false, fmt.Errorf("engine: repair: %s: %w (open it with the build that wrote it)", path, err)
			}
			// Damaged: keep every record whose primary data is intact, in
			// a new file with everything derived rebuilt.
			sv, err := salvageSegment(opts.FS, path, mc.cfg, ms)
			if err != nil {
				return rep, false, err
			}
			file := m.nextFile
			ns, err := rebuildSegment(&opts, d.segDir(), mc.cfg, sv, ms.file, file)
			if err != nil {
				return rep, false, err
			}
			if ns != nil {
				m.nextFile++
				kept = append(kept, *ns)
			}
			q, err := writeQuarantine(opts.FS, d.segDir(), sv)
			if err != nil {
				return rep, false, fmt.Errorf("engine: repair: quarantine %s: %w", path, err)
			}
			if q != "" {
				rep.QuarantineFiles = append(rep.QuarantineFiles, q)
			}
			rep.RebuiltSegments = append(rep.RebuiltSegments, path)
			rep.LostRecords = append(rep.LostRecords, sv.lost...)
			rep.DroppedRecords += len(sv.lost) + sv.unknown
			if len(sv.lost) > 0 || sv.unknown > 0 {
				rep.QuarantinedSegments = append(rep.QuarantinedSegments, path)
				after = append(after, func() error { return opts.FS.Rename(path, path+quarantineSuffix) })
			} else {
				after = append(after, func() error { return opts.FS.Remove(path) })
			}
			changed, segsChanged = true, true
		}
		mc.segs = kept
	}
	if changed {
		if err := opts.FS.SyncDir(d.segDir()); err != nil {
			return rep, false, fmt.Errorf("engine: repair: %w", err)
		}
		// The new manifest supersedes the damaged ones. The one it was
		// written from stays as the fallback unless segments it names are
		// gone or replaced now.
		num := st.maxNum + 1
		if err, curErr := writeManifest(opts.FS, dir, num, m); err != nil || curErr != nil {
			return rep, false, fmt.Errorf("engine: repair: %w", errors.Join(err, curErr))
		}
		if segsChanged {
			keep = nil
		}
		if err := removeManifests(opts.FS, dir, append(keep, num)...); err != nil {
			return rep, false, fmt.Errorf("engine: repair: %w", err)
		}
		for _, f := range after {
			if err := f(); err != nil {
				return rep, false, fmt.Errorf("engine: repair: %w", err)
			}
		}
		if len(after) > 0 {
			if err := opts.FS.SyncDir(d.segDir()); err != nil {
				return rep, false, fmt.Errorf("engine: repair: %w", err)
			}
		}
	}
	walDir := filepath.Join(dir, "wal")
	wopts := wal.Options{FS: opts.FS, SegmentSize: opts.walSegSize, IgnoreBefore: walIgnoreBefore(m), OwnDir: true, Logger: opts.Logger}
	if _, err := opts.FS.Stat(walDir); err == nil {
		moved, err := wal.SetAsideForeign(walDir, wopts)
		for _, sa := range moved {
			rep.SetAside = append(rep.SetAside, filepath.Join(walDir, sa.Name)+" -> "+sa.NewName)
		}
		if err != nil {
			return rep, false, fmt.Errorf("engine: repair: WAL: %w", err)
		}
	}
	if err := checkWALReaches(opts.FS, walDir, m); err != nil {
		// The segments after the checkpoint are gone, and with them what
		// they held. The log must go on above every LSN handed out.
		need := max(m.walSeg, wal.LSN(m.checkpoint).Segment())
		if err := mkdirDurable(opts.FS, walDir); err != nil {
			return rep, false, fmt.Errorf("engine: repair: WAL: %w", err)
		}
		if err := wal.CreateSegment(walDir, wopts, need); err != nil {
			return rep, false, fmt.Errorf("engine: repair: WAL: %w", err)
		}
		rep.MissingWAL = append(rep.MissingWAL, filepath.Join(walDir, fmt.Sprintf("%08d", need)))
	}
	if !rebuilt {
		// A fallback whose files or WAL are gone is no fallback: drop it,
		// and the WAL only it needed, as a flush would have.
		st, err := loadManifests(opts.FS, dir)
		if err != nil {
			return rep, false, err
		}
		if num, problem := unusableFallback(opts.FS, dir, st); problem != nil {
			var ce *CorruptionError
			if !errors.As(problem, &ce) {
				return rep, false, fmt.Errorf("engine: repair: %w", problem)
			}
			if err := removeManifests(opts.FS, dir, st.num); err != nil {
				return rep, false, fmt.Errorf("engine: repair: %w", err)
			}
			if err := removeWALBefore(opts.FS, walDir, wopts.IgnoreBefore); err != nil {
				return rep, false, fmt.Errorf("engine: repair: WAL: %w", err)
			}
			rep.UnusableFallback = append(rep.UnusableFallback, filepath.Join(dir, manifestFileName(num)))
		}
	}
	if damaged := walDamaged(opts.FS, walDir); len(damaged) > 0 && damaged[0] < wopts.IgnoreBefore {
		// Damage in segments wholly before the checkpoint: their records
		// are all in segment files. They only served the previous
		// manifest as a fallback, which goes with them.
		if err := removeWALBefore(opts.FS, walDir, wopts.IgnoreBefore); err != nil {
			return rep, false, fmt.Errorf("engine: repair: WAL: %w", err)
		}
		for _, seg := range damaged {
			if seg < wopts.IgnoreBefore {
				rep.ObsoleteWALRemoved = append(rep.ObsoleteWALRemoved, filepath.Join(walDir, fmt.Sprintf("%08d", seg)))
			}
		}
		cur := st.maxNum + 1
		if !changed {
			cur = st.num
		}
		if err := removeManifests(opts.FS, dir, cur); err != nil {
			return rep, false, fmt.Errorf("engine: repair: %w", err)
		}
	}
	if len(walDamaged(opts.FS, walDir)) == 0 {
		return rep, rebuilt, nil // opening the log could still start a segment: leave it alone
	}
	for range 3 {
		err := walProblem(opts.FS, walDir, wopts, replayFrom(m))
		var ce *wal.CorruptionError
		if !errors.As(err, &ce) {
			if err != nil {
				return rep, false, fmt.Errorf("engine: repair: WAL: %w", err)
			}
			return rep, rebuilt, nil
		}
		losses, err := wal.Repair(walDir, wopts, err)
		for _, l := range losses {
			wl := WALLoss{LSN: l.LSN(), Bytes: l.To - l.From, Cause: l.Err.Error()}
			if l.Saved != "" {
				wl.Saved = filepath.Join(walDir, l.Saved)
			}
			rep.WALLost = append(rep.WALLost, wl)
		}
		if err != nil {
			return rep, false, fmt.Errorf("engine: repair: WAL: %w", err)
		}
	}
	return rep, false, errors.New("engine: repair: the WAL is still damaged after three repairs")
}

// walProblem returns the first damage in the WAL segments from
// opts.IgnoreBefore on: what opening and replaying it from from reports,
// or else what reading each segment through finds (bytes after a
// segment's end, which Open only logs). Nil when there is none.
func walProblem(fsys FS, dir string, opts wal.Options, from wal.LSN) error {
	l, err := wal.Open(dir, opts)
	if err == nil {
		err = l.Replay(from, func(wal.LSN, []byte) error { return nil })
		err = errors.Join(err, l.Close())
	}
	if err != nil {
		return err
	}
	for _, seg := range walDamaged(fsys, dir) {
		if seg >= opts.IgnoreBefore {
			return walSegmentDamage(fsys, filepath.Join(dir, fmt.Sprintf("%08d", seg)), seg)
		}
	}
	return nil
}

// removeWALBefore deletes the WAL segments numbered below seg, oldest
// first (a crash midway leaves no gap above the ones removed). Files that
// only look like segments are not the log's: they stay.
func removeWALBefore(fsys FS, dir string, seg uint32) error {
	all, _, err := wal.ListSegments(fsys, dir)
	if err != nil {
		return err
	}
	var segs []uint32
	for _, s := range all {
		if s < seg {
			segs = append(segs, s)
		}
	}
	for _, s := range segs {
		if err := fsys.Remove(filepath.Join(dir, fmt.Sprintf("%08d", s))); err != nil {
			return err
		}
	}
	if len(segs) > 0 {
		return fsys.SyncDir(dir)
	}
	return nil
}

// walDamaged reads every WAL segment without changing anything and
// returns, ascending, the numbers of those holding a record that does not
// checksum (a missing or empty log has none). Files that only look like
// segments (wal.ListSegments) are not the log's and are not read.
func walDamaged(fsys FS, dir string) []uint32 {
	segs, _, err := wal.ListSegments(fsys, dir)
	if err != nil {
		return nil
	}
	var bad []uint32
	for _, seg := range segs {
		if walSegmentDamage(fsys, filepath.Join(dir, fmt.Sprintf("%08d", seg)), seg) != nil {
			bad = append(bad, seg)
		}
	}
	return bad
}

// walSegmentDamage reads one WAL segment through and returns its first
// damage, nil when every record checksums.
func walSegmentDamage(fsys FS, path string, seg uint32) error {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	r := wal.NewReader(f, st.Size(), seg)
	for r.Next() {
	}
	return r.Err()
}
