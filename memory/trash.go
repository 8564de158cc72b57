package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Forgotten memories. With Options.ForgetRetention set, Delete, Forget and ForgetWhere do not
// drop what they remove: they move it to the trash, a collection per embedding model
// ("forgotten-" and the same hash as the archive's name, listed under keyForgotten), with the
// memory's text, metadata, timestamps, access statistics and vector as they were, and its
// history left in place. Two reserved metadata keys (control characters keep them apart from
// user keys, which may not hold any) record when it was forgotten and when it is purged. Unforget
// brings a memory back under its ID; Purge, PurgeWhere and PurgeForgotten delete for good (the
// memory, its trash and archive copies and its history). A forgotten memory past its purge time
// is deleted for good by the next forget, restore, cleanup or listing of the trash, and when the
// store is opened; like every delete, its bytes leave the segment files at the next compaction.

const (
	keyForgotten     = "memory/forgotten"
	trashPrefix      = "forgotten-"
	metaForgottenAt  = "\x1fforgotten_at"
	metaPurgeAfter   = "\x1fpurge_after"
	trashBatch       = 256
	maxTrashDuration = 100 * 365 * 24 * time.Hour
)

// DefaultForgetRetention is the retention memctl uses; the library's default is 0 (forgetting is
// final) so that an embedding application keeps the semantics it had.
const DefaultForgetRetention = 30 * 24 * time.Hour

// ForgottenMemory is a memory in the trash (without its vector).
type ForgottenMemory struct {
	Memory
	// Forgotten is when it was forgotten; PurgeAfter when it is deleted for good.
	Forgotten, PurgeAfter time.Time
}

func trashName(fingerprint string, dim int) string {
	return trashPrefix + strings.TrimPrefix(archiveName(fingerprint, dim), "archive-")
}

// keepsForgotten reports whether forgetting moves memories to the trash.
func (s *Store) keepsForgotten() bool { return s.opts.ForgetRetention > 0 }

// trashes returns the trash collections that exist.
func (s *Store) trashes(ctx context.Context) ([]Collection, error) {
	return s.sideColls(ctx, keyForgotten)
}

// removeLocked forgets the memories ids of the live collection c (the caller found them there,
// or they are ignored): into the trash when the store keeps forgotten memories, else for good
// with their history. It returns how many were live. The caller holds s.wmu.
func (s *Store) removeLocked(ctx context.Context, c Collection, emb Embedder, ids []string) (int, error) {
	if !s.keepsForgotten() {
		sessions, err := s.sessionsOf(ctx, c, ids)
		if err != nil {
			return 0, err
		}
		n, err := c.Delete(ctx, ids)
		if err != nil {
			return 0, fmt.Errorf("memory: forgetting: %w", err)
		}
		if err := s.forgetHistory(ctx, ids); err != nil {
			return n, err
		}
		return n, s.releaseSessionKeys(sessions)
	}
	if err := s.expireLocked(ctx); err != nil {
		return 0, err
	}
	tc, err := s.sideFor(ctx, keyForgotten, trashName(emb.Fingerprint(), emb.Dim()), emb.Fingerprint(), emb.Dim(), true)
	if err != nil {
		return 0, err
	}
	now := s.opts.Clock().UTC()
	purge := now.Add(min(s.opts.ForgetRetention, maxTrashDuration))
	n := 0
	for i := 0; i < len(ids); i += trashBatch {
		ms, err := c.Get(ctx, ids[i:min(i+trashBatch, len(ids))])
		if err != nil {
			return n, err
		}
		if len(ms) == 0 {
			continue
		}
		got := make([]string, len(ms))
		for j := range ms {
			m := &ms[j]
			got[j] = m.ID
			md := make(map[string]any, len(m.Metadata)+2)
			for k, v := range m.Metadata {
				md[k] = v
			}
			md[metaForgottenAt] = float64(now.UnixMilli())
			md[metaPurgeAfter] = float64(purge.UnixMilli())
			m.Metadata = md
		}
		// The trash copy is durable before the live one goes: a crash in between leaves the
		// memory in both, and Unforget then keeps the live one.
		if err := upsert(ctx, tc, ms); err != nil {
			return n, fmt.Errorf("memory: moving to the trash: %w", err)
		}
		k, err := c.Delete(ctx, got)
		if err != nil {
			return n, fmt.Errorf("memory: forgetting: %w", err)
		}
		n += k
	}
	return n, nil
}

// fromTrash strips the reserved keys of a trash record.
func fromTrash(m Memory) ForgottenMemory {
	fm := ForgottenMemory{Memory: m}
	if at, ok := m.Metadata[metaForgottenAt].(float64); ok {
		fm.Forgotten = time.UnixMilli(int64(at)).UTC()
	}
	if at, ok := m.Metadata[metaPurgeAfter].(float64); ok {
		fm.PurgeAfter = time.UnixMilli(int64(at)).UTC()
	}
	if len(m.Metadata) > 0 {
		md := make(map[string]any, len(m.Metadata))
		for k, v := range m.Metadata {
			if k != metaForgottenAt && k != metaPurgeAfter {
				md[k] = v
			}
		}
		if len(md) == 0 {
			md = nil
		}
		fm.Metadata = md
	}
	return fm
}

// expireLocked deletes for good the forgotten memories past their purge time (a record without
// one counts as expired). The caller holds s.wmu.
func (s *Store) expireLocked(ctx context.Context) error {
	tcs, err := s.trashes(ctx)
	if err != nil || len(tcs) == 0 {
		return err
	}
	now := s.opts.Clock()
	sessions := map[string]bool{}
	for _, tc := range tcs {
		var ids []string
		err := scanLight(ctx, tc, nil, func(m *Memory) {
			if fm := fromTrash(*m); !fm.PurgeAfter.After(now) {
				ids = append(ids, m.ID)
				sessions[m.Session] = true
			}
		})
		if err != nil {
			return fmt.Errorf("memory: reading the trash: %w", err)
		}
		if err := s.purgeTrashLocked(ctx, tc, ids); err != nil {
			return err
		}
	}
	return s.releaseSessionKeys(sessions)
}

// SessionKeyReleaser is implemented by a Backend that keeps a data key per session (an
// encrypted engine store): ReleaseSessionKeys destroys the key of each given session that
// nothing stored holds any more, so that what it sealed (the WAL, the files that held the
// session, copies and backups of them) cannot be read with the store's keys
// (docs/format/encryption.md), and returns how many it destroyed.
type SessionKeyReleaser interface {
	ReleaseSessionKeys(sessions ...string) (int, error)
}

// sessionsOf returns the sessions of the memories ids of c, when the backend keeps per-session
// keys (nil otherwise: nothing needs them).
func (s *Store) sessionsOf(ctx context.Context, c Collection, ids []string) (map[string]bool, error) {
	if _, ok := s.b.(SessionKeyReleaser); !ok {
		return nil, nil
	}
	sessions := map[string]bool{}
	for i := 0; i < len(ids); i += trashBatch {
		ms, err := c.Get(ctx, ids[i:min(i+trashBatch, len(ids))])
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			sessions[m.Session] = true
		}
	}
	return sessions, nil
}

// releaseSessionKeys offers each session a purge touched to the backend's key store, which
// destroys the keys of those left with no record anywhere. The caller holds s.wmu.
func (s *Store) releaseSessionKeys(sessions map[string]bool) error {
	r, ok := s.b.(SessionKeyReleaser)
	if !ok {
		return nil
	}
	if len(sessions) == 0 {
		return nil
	}
	if _, err := r.ReleaseSessionKeys(slices.Sorted(maps.Keys(sessions))...); err != nil {
		return fmt.Errorf("memory: purged; destroying the sessions' keys: %w", err)
	}
	return nil
}

// purgeTrashLocked deletes ids from the trash collection tc, and the history of those that are
// not live. The caller holds s.wmu.
func (s *Store) purgeTrashLocked(ctx context.Context, tc Collection, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := tc.Delete(ctx, ids); err != nil {
		return fmt.Errorf("memory: purging the trash: %w", err)
	}
	c, _, err := s.current()
	if err != nil {
		return err
	}
	var gone []string
	for i := 0; i < len(ids); i += trashBatch {
		part := ids[i:min(i+trashBatch, len(ids))]
		live, err := c.Get(ctx, part)
		if err != nil {
			return err
		}
		for _, id := range part {
			if !slices.ContainsFunc(live, func(m Memory) bool { return m.ID == id }) {
				gone = append(gone, id)
			}
		}
	}
	return s.forgetHistory(ctx, gone)
}

// Forgotten lists the forgotten memories in the trash (without vectors): those with the given
// IDs, or all when ids is empty; most recently forgotten first. Expired ones are purged first.
func (s *Store) Forgotten(ctx context.Context, ids ...string) ([]ForgottenMemory, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, _, err := s.current(); err != nil {
		return nil, err
	}
	if err := s.expireLocked(ctx); err != nil {
		return nil, err
	}
	tcs, err := s.trashes(ctx)
	if err != nil {
		return nil, err
	}
	var out []ForgottenMemory
	for _, tc := range tcs {
		if len(ids) > 0 {
			ms, err := tc.Get(ctx, ids)
			if err != nil {
				return nil, err
			}
			for _, m := range ms {
				m.Vector = nil
				out = append(out, fromTrash(m))
			}
			continue
		}
		err := scanLight(ctx, tc, nil, func(m *Memory) { out = append(out, fromTrash(*m)) })
		if err != nil {
			return nil, fmt.Errorf("memory: reading the trash: %w", err)
		}
	}
	slices.SortFunc(out, func(a, b ForgottenMemory) int {
		if c := b.Forgotten.Compare(a.Forgotten); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Unforget brings forgotten memories back under their IDs, exactly as they were forgotten
// (text, metadata, timestamps, access statistics, vector; their history was kept), re-embedding
// them only if the store has switched embedding models since. It is all or nothing: an ID not in
// the trash is a *NotFoundError naming it, and nothing is restored. A forgotten memory whose ID
// is live again keeps the live one (its trash copy is dropped, not counted). It returns how many
// it restored.
func (s *Store) Unforget(ctx context.Context, ids ...string) (int, error) {
	if len(ids) == 0 {
		return 0, errorf(ErrInvalidInput, "no memory IDs")
	}
	ids, err := distinctIDs(ids)
	if err != nil {
		return 0, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	coll, emb, err := s.current()
	if err != nil {
		return 0, err
	}
	if err := s.expireLocked(ctx); err != nil {
		return 0, err
	}
	tcs, err := s.trashes(ctx)
	if err != nil {
		return 0, err
	}
	found := map[string]bool{}
	type part struct {
		tc Collection
		ms []Memory
	}
	var parts []part
	for _, tc := range tcs {
		for i := 0; i < len(ids); i += trashBatch {
			ms, err := tc.Get(ctx, ids[i:min(i+trashBatch, len(ids))])
			if err != nil {
				return 0, fmt.Errorf("memory: reading the trash: %w", err)
			}
			var take []Memory
			for _, m := range ms {
				if !found[m.ID] {
					found[m.ID] = true
					take = append(take, fromTrash(m).Memory)
				}
			}
			if len(take) > 0 {
				parts = append(parts, part{tc, take})
			}
		}
	}
	var missing []string
	for _, id := range ids {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return 0, &NotFoundError{Kind: "forgotten memory", IDs: missing}
	}
	restored := 0
	for _, p := range parts {
		n, err := s.restorePart(ctx, coll, emb, p.tc.Spec(), p.ms)
		if err != nil {
			return restored, err
		}
		restored += n
		got := make([]string, len(p.ms))
		for i := range p.ms {
			got[i] = p.ms[i].ID
		}
		if _, err := p.tc.Delete(ctx, got); err != nil {
			return restored, fmt.Errorf("memory: restored %d memories, removing them from the trash: %w (run the restore again)", restored, err)
		}
	}
	return restored, nil
}

// Purge deletes the memories with the given IDs for good, wherever they are (live, forgotten in
// the trash, archived by cleanup), and their history, and returns how many IDs it found.
func (s *Store) Purge(ctx context.Context, ids ...string) (int, error) {
	ids, err := distinctIDs(ids)
	if err != nil {
		return 0, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	colls, err := s.purgeTargets(ctx)
	if err != nil {
		return 0, err
	}
	found := map[string]bool{}
	sessions := map[string]bool{}
	for _, col := range colls {
		for i := 0; i < len(ids); i += trashBatch {
			part := ids[i:min(i+trashBatch, len(ids))]
			ms, err := col.Get(ctx, part)
			if err != nil {
				return 0, err
			}
			if len(ms) == 0 {
				continue
			}
			got := make([]string, len(ms))
			for j, m := range ms {
				got[j] = m.ID
				found[m.ID] = true
				sessions[m.Session] = true
			}
			if _, err := col.Delete(ctx, got); err != nil {
				return 0, fmt.Errorf("memory: purging: %w", err)
			}
		}
	}
	if err := s.forgetHistory(ctx, ids); err != nil {
		return len(found), err
	}
	return len(found), s.releaseSessionKeys(sessions)
}

// PurgeWhere deletes for good every memory the filter matches, live, forgotten or archived, and
// their history, and returns how many. Like ForgetWhere it refuses a nil filter.
func (s *Store) PurgeWhere(ctx context.Context, f *Filter) (int, error) {
	if f == nil {
		return 0, errorf(ErrInvalidFilter, "PurgeWhere needs a filter")
	}
	if err := f.Validate(); err != nil {
		return 0, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	colls, err := s.purgeTargets(ctx)
	if err != nil {
		return 0, err
	}
	seen := map[string]bool{}
	sessions := map[string]bool{}
	var all []string
	for _, col := range colls {
		var ids []string
		if err := scanLight(ctx, col, f, func(m *Memory) { ids = append(ids, m.ID); sessions[m.Session] = true }); err != nil {
			return 0, err
		}
		if len(ids) == 0 {
			continue
		}
		if _, err := col.Delete(ctx, ids); err != nil {
			return 0, fmt.Errorf("memory: purging: %w", err)
		}
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				all = append(all, id)
			}
		}
	}
	if err := s.forgetHistory(ctx, all); err != nil {
		return len(all), err
	}
	return len(all), s.releaseSessionKeys(sessions)
}

// PurgeForgotten empties the trash: every forgotten memory is deleted for good, with its
// history. It returns how many.
func (s *Store) PurgeForgotten(ctx context.Context) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, _, err := s.current(); err != nil {
		return 0, err
	}
	tcs, err := s.trashes(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	sessions := map[string]bool{}
	for _, tc := range tcs {
		var ids []string
		if err := scanLight(ctx, tc, nil, func(m *Memory) { ids = append(ids, m.ID); sessions[m.Session] = true }); err != nil {
			return n, err
		}
		if err := s.purgeTrashLocked(ctx, tc, ids); err != nil {
			return n, err
		}
		n += len(ids)
	}
	return n, s.releaseSessionKeys(sessions)
}

// forgottenCount counts the memories in the trash.
func (s *Store) forgottenCount(ctx context.Context) (int, error) {
	tcs, err := s.trashes(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, tc := range tcs {
		k, err := tc.Count(ctx, nil)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// isForgotten reports whether the trash holds id.
func (s *Store) isForgotten(ctx context.Context, id string) (bool, error) {
	tcs, err := s.trashes(ctx)
	if err != nil {
		return false, err
	}
	for _, tc := range tcs {
		ms, err := tc.Get(ctx, []string{id})
		if err != nil {
			return false, err
		}
		if len(ms) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// purgeTargets is every collection a purge reaches: the current model's live memories, then
// every archive and trash.
func (s *Store) purgeTargets(ctx context.Context) ([]Collection, error) {
	c, _, err := s.current()
	if err != nil {
		return nil, err
	}
	acs, err := s.archives(ctx)
	if err != nil {
		return nil, err
	}
	tcs, err := s.trashes(ctx)
	if err != nil {
		return nil, err
	}
	return append(append([]Collection{c}, acs...), tcs...), nil
}

// ForgetRetention is how long forgotten memories stay restorable (0: forgetting is final).
func (s *Store) ForgetRetention() time.Duration { return max(s.opts.ForgetRetention, 0) }

// distinctIDs is ids sorted without repeats, or ErrInvalidInput when one is empty.
func distinctIDs(ids []string) ([]string, error) {
	for _, id := range ids {
		if id == "" {
			return nil, errorf(ErrInvalidInput, "empty memory ID")
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(ids))), nil
}
