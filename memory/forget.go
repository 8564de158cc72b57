package memory

import (
	"context"
	"fmt"
)

// Forget deletes the memories with the given IDs and returns how many existed.
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
	return n, nil
}

// ForgetWhere deletes every memory the filter matches and returns how many. A nil filter is
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
	n, err := c.DeleteWhere(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("memory: forgetting: %w", err)
	}
	return n, nil
}
