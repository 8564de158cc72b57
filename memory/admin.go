package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ErrUnsupported: the backend does not offer this operation.
var ErrUnsupported = errors.New("memory: not supported by this backend")

// Maintainer is implemented by backends with local storage to maintain (the engine backend).
type Maintainer interface {
	Flush() error
	Compact() error
	Check() error
	Backup(dir string) error
	// BackendStats reports storage figures: bytes on disk, segments, WAL size.
	BackendStats() BackendStats
}

// BackendStats are storage figures of a Maintainer backend; zero where unknown.
type BackendStats struct {
	DiskBytes int64 `json:"disk_bytes"`
	Segments  int   `json:"segments"`
	WALBytes  int64 `json:"wal_bytes"`
	MemBytes  int64 `json:"mem_bytes"`
}

// Stats describes a store.
type Stats struct {
	Collection  string `json:"collection"`
	Fingerprint string `json:"fingerprint"`
	Dim         int    `json:"dim"`
	Memories    int    `json:"memories"`
	Sessions    int    `json:"sessions"`
	Archived    int    `json:"archived"`
	// Forgotten counts the memories in the trash (Options.ForgetRetention).
	Forgotten int          `json:"forgotten"`
	Tasks     int          `json:"tasks"`
	Backend   BackendStats `json:"backend"`
}

// SessionInfo summarizes one session's long-term memories.
type SessionInfo struct {
	Name     string `json:"name"`
	Memories int    `json:"memories"`
	// Newest is the latest Updated time of the session's memories.
	Newest time.Time `json:"newest"`
}

// Sessions lists the sessions that hold memories, by name. It scans every memory (without
// calling the embedder), so it costs time proportional to the store.
func (s *Store) Sessions(ctx context.Context) ([]SessionInfo, error) {
	c, _, err := s.current()
	if err != nil {
		return nil, err
	}
	by := map[string]*SessionInfo{}
	err = c.Scan(ctx, nil, func(m Memory) error {
		si := by[m.Session]
		if si == nil {
			si = &SessionInfo{Name: m.Session}
			by[m.Session] = si
		}
		si.Memories++
		if m.Updated.After(si.Newest) {
			si.Newest = m.Updated
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, 0, len(by))
	for _, si := range by {
		out = append(out, *si)
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Scan calls fn for every memory f matches (nil: all), vectors included, until fn returns an
// error. fn may call the Store.
func (s *Store) Scan(ctx context.Context, f *Filter, fn func(Memory) error) error {
	c, _, err := s.current()
	if err != nil {
		return err
	}
	return c.Scan(ctx, f, fn)
}

// ImportBatch is how many memories Import writes per backend call.
const ImportBatch = 1000

// Import writes memories as given (IDs, sessions, texts, metadata, timestamps and access
// statistics kept), replacing memories with the same IDs, without near-duplicate merging. A
// memory whose Vector is nil or of another dimension is embedded from its text; given vectors are
// normalized. Every memory is validated before anything is written (an empty ID or text, a bad
// session, tag or importance, an ID twice); the writes then go in batches of ImportBatch, each
// durable on its own.
func (s *Store) Import(ctx context.Context, ms []Memory) error {
	seen := make(map[string]bool, len(ms))
	for i := range ms {
		m := &ms[i]
		if m.ID == "" || seen[m.ID] {
			return errorf(ErrInvalidInput, "memory %d: empty or repeated ID %q", i, m.ID)
		}
		seen[m.ID] = true
		o := RememberOptions{Source: m.Source, Tags: m.Tags, Importance: m.Importance, Metadata: m.Metadata, Context: m.Context}
		if err := s.checkRemember(m.Session, m.Text, &o); err != nil {
			return fmt.Errorf("memory %q: %w", m.ID, err)
		}
		m.Metadata = o.Metadata
		if m.Importance == 0 || m.Created.IsZero() || m.Updated.IsZero() {
			return errorf(ErrInvalidInput, "memory %q: importance, Created and Updated must be set", m.ID)
		}
		if err := checkTimes(fmt.Sprintf("memory %q: time", m.ID), m.Created, m.Updated, m.LastAccess); err != nil {
			return err
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	coll, emb, err := s.current()
	if err != nil {
		return err
	}
	for len(ms) > 0 {
		batch := make([]Memory, min(len(ms), ImportBatch))
		var texts []string
		var need []int
		for i := range batch {
			batch[i] = ms[i].clone()
			if len(batch[i].Vector) != emb.Dim() || !finite(batch[i].Vector) {
				need = append(need, i)
				texts = append(texts, batch[i].Text)
			} else if err := normalize(batch[i].Vector, emb.Dim()); err != nil {
				return err
			}
		}
		vecs, err := s.embed(ctx, emb, texts)
		if err != nil {
			return err
		}
		for j, i := range need {
			batch[i].Vector = vecs[j]
		}
		if err := upsert(ctx, coll, batch); err != nil {
			return fmt.Errorf("memory: importing: %w", err)
		}
		ms = ms[len(batch):]
	}
	return nil
}

func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

// Stats reports counts (memories, sessions, archived memories, tasks) and, for a Maintainer
// backend, storage figures. Like Sessions it scans every memory.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	c, _, err := s.current()
	if err != nil {
		return Stats{}, err
	}
	spec := c.Spec()
	st := Stats{Collection: spec.Name, Fingerprint: spec.Fingerprint, Dim: spec.Dim}
	sessions, err := s.Sessions(ctx)
	if err != nil {
		return Stats{}, err
	}
	st.Sessions = len(sessions)
	for _, si := range sessions {
		st.Memories += si.Memories
	}
	if st.Archived, err = s.archivedCount(ctx); err != nil {
		return Stats{}, err
	}
	if st.Forgotten, err = s.forgottenCount(ctx); err != nil {
		return Stats{}, err
	}
	s.stmu.Lock()
	if err = s.upgradeTaskKeysLocked(ctx); err == nil {
		st.Tasks, err = s.countRecords(ctx, kindTask)
	}
	s.stmu.Unlock()
	if err != nil {
		return Stats{}, err
	}
	if m, ok := s.b.(Maintainer); ok {
		st.Backend = m.BackendStats()
	}
	return st, nil
}

func (s *Store) maintainer() (Maintainer, error) {
	if _, _, err := s.current(); err != nil {
		return nil, err
	}
	m, ok := s.b.(Maintainer)
	if !ok {
		return nil, ErrUnsupported
	}
	return m, nil
}

// ProgressMaintainer is implemented by Maintainer backends that report how far Check and Compact
// have come (the engine backend: records checked or copied).
type ProgressMaintainer interface {
	CheckProgress(p func(done, total int64)) error
	CompactProgress(p func(done, total int64)) error
}

// CheckProgress is Check reporting through p how many of the backend's segment records it has
// checked; p may be nil.
func (s *Store) CheckProgress(ctx context.Context, p func(done, total int64)) error {
	m, err := s.maintainer()
	if err != nil {
		return err
	}
	if pm, ok := m.(ProgressMaintainer); ok && p != nil {
		err = pm.CheckProgress(p)
	} else {
		err = m.Check()
	}
	if err != nil {
		return err
	}
	return s.checkRecords(ctx)
}

// CompactProgress is Compact reporting through p how many records it has copied into the merged
// segments; p may be nil.
func (s *Store) CompactProgress(_ context.Context, p func(done, total int64)) error {
	m, err := s.maintainer()
	if err != nil {
		return err
	}
	if pm, ok := m.(ProgressMaintainer); ok && p != nil {
		return pm.CompactProgress(p)
	}
	return m.Compact()
}

// BackupProgress is Backup reporting through p the bytes written into dir, of the store's
// segment bytes (the backup copies the segments after a flush, so the total is an estimate
// until the end, when done and total are the bytes written); p may be nil.
func (s *Store) BackupProgress(ctx context.Context, dir string, p func(done, total int64)) error {
	if p == nil {
		return s.Backup(ctx, dir)
	}
	m, err := s.maintainer()
	if err != nil {
		return err
	}
	total := m.BackendStats().DiskBytes + m.BackendStats().MemBytes
	p(0, max(total, 1))
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() { // the copy runs inside the backend: watch the files grow
		defer close(polled)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				n := dirBytes(dir)
				p(min(n, total), max(total, n))
			}
		}
	}()
	err = m.Backup(dir)
	close(stop)
	<-polled
	if err != nil {
		return err
	}
	n := dirBytes(dir)
	p(n, n)
	return nil
}

// dirBytes sums the sizes of the regular files under dir (0 where unreadable).
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// Flush makes the backend write its in-memory state to its files (ErrUnsupported if it has none).
func (s *Store) Flush(context.Context) error {
	m, err := s.maintainer()
	if err != nil {
		return err
	}
	return m.Flush()
}

// Compact merges the backend's files and reclaims deleted memories' space.
func (s *Store) Compact(context.Context) error {
	m, err := s.maintainer()
	if err != nil {
		return err
	}
	return m.Compact()
}

// Check verifies the backend's files (checksums, structure), then decodes every conversation
// and task record, so a payload that no longer parses is reported before it is read.
func (s *Store) Check(ctx context.Context) error {
	m, err := s.maintainer()
	if err != nil {
		return err
	}
	if err := m.Check(); err != nil {
		return err
	}
	return s.checkRecords(ctx)
}

// Backup writes a consistent copy of the backend's store into dir. A backup of an encrypted
// store holds no KEYS: it opens with the store's KEYS copied in, and a session purged since
// stays unreadable in it (docs/format/encryption.md, "Backups").
func (s *Store) Backup(_ context.Context, dir string) error {
	m, err := s.maintainer()
	if err != nil {
		return err
	}
	return m.Backup(dir)
}

// KeyedBackuper is implemented by backends whose stores can be encrypted (the engine backend):
// BackupWithKeys is Backup that also copies the store's keys.
type KeyedBackuper interface {
	BackupWithKeys(dir string) error
}

// BackupWithKeys is Backup that also copies an encrypted store's KEYS file, so the backup
// opens on its own with the store's passphrase or key file (ErrUnsupported where the backend
// has no keys to copy).
func (s *Store) BackupWithKeys(_ context.Context, dir string) error {
	if _, _, err := s.current(); err != nil {
		return err
	}
	k, ok := s.b.(KeyedBackuper)
	if !ok {
		return ErrUnsupported
	}
	return k.BackupWithKeys(dir)
}
