package memory

import (
	"context"
	"fmt"
)

// Forget forgets the memories with the given IDs and returns how many existed (Delete fails on
// unknown IDs instead). With Options.ForgetRetention set they move to the trash, restorable with
// Unforget until their retention ends; otherwise they and their history are deleted for good, as
// Purge always does (see trash.go).
func (s *Store) Forget(ctx context.Context, ids ...string) (int, error) {
	for _, id := range ids {
		if id == "" {
			return 0, errorf(ErrInvalidInput, "empty memory ID")
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	c, emb, err := s.current()
	if err != nil {
		return 0, err
	}
	return s.removeLocked(ctx, c, emb, ids)
}

// ForgetWhere forgets every memory the filter matches, as Forget does, and returns how many. A nil filter is
// rejected, so that a missing argument cannot wipe the store; use Exists(FieldSession) to mean
// "everything".
func (s *Store) ForgetWhere(ctx context.Context, f *Filter) (int, error) {
	if f == nil {
		return 0, errorf(ErrInvalidFilter, "ForgetWhere needs a filter")
	}
	if err := f.Validate(); err != nil {
		return 0, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	c, emb, err := s.current()
	if err != nil {
		return 0, err
	}
	if s.keepsForgotten() {
		var ids []string
		if err := scanLight(ctx, c, f, func(m *Memory) { ids = append(ids, m.ID) }); err != nil {
			return 0, err
		}
		return s.removeLocked(ctx, c, emb, ids)
	}
	return s.deleteWhereLocked(ctx, c, f)
}

// deleteWhereLocked deletes what f matches in c for good, with its history. The caller holds
// s.wmu.
func (s *Store) deleteWhereLocked(ctx context.Context, c Collection, f *Filter) (int, error) {
	hc, err := s.historyColl(ctx, false)
	if err != nil {
		return 0, err
	}
	var ids []string
	_, releases := s.b.(SessionKeyReleaser)
	sessions := map[string]bool{}
	if hc != nil || releases { // the IDs, to forget their history too; the sessions, for their keys
		if err := scanLight(ctx, c, f, func(m *Memory) { ids = append(ids, m.ID); sessions[m.Session] = true }); err != nil {
			return 0, err
		}
	}
	n, err := c.DeleteWhere(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("memory: forgetting: %w", err)
	}
	if err := s.forgetHistory(ctx, ids); err != nil {
		return n, err
	}
	return n, s.releaseSessionKeys(sessions)
}
