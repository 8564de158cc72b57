package memory

import (
	"context"
	"fmt"
)

// Forget deletes the memories with the given IDs and their history, and returns how many
// existed (Delete fails on unknown IDs instead).
func (s *Store) Forget(ctx context.Context, ids ...string) (int, error) {
	for _, id := range ids {
		if id == "" {
			return 0, errorf(ErrInvalidInput, "empty memory ID")
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	c, _, err := s.current()
	if err != nil {
		return 0, err
	}
	n, err := c.Delete(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("memory: forgetting: %w", err)
	}
	return n, s.forgetHistory(ctx, ids)
}

// ForgetWhere deletes every memory the filter matches, and their history, and returns how many. A nil filter is
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
	c, _, err := s.current()
	if err != nil {
		return 0, err
	}
	hc, err := s.historyColl(ctx, false)
	if err != nil {
		return 0, err
	}
	var ids []string
	if hc != nil { // the IDs, to forget their history too
		if err := scanLight(ctx, c, f, func(m *Memory) { ids = append(ids, m.ID) }); err != nil {
			return 0, err
		}
	}
	n, err := c.DeleteWhere(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("memory: forgetting: %w", err)
	}
	return n, s.forgetHistory(ctx, ids)
}
