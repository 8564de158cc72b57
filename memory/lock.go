package memory

// LockNoter is implemented by backends that hold a lock on local storage and can leave a note
// in it for other processes (the engine backend: its LOCK file).
type LockNoter interface {
	SetLockNote(note string) error
}

// SetLockNote records a one-line note in the backend's lock for processes that find the store
// locked (memctl serve records its address there, so memctl commands can reach it). It returns
// ErrUnsupported for backends without a lock.
func (s *Store) SetLockNote(note string) error {
	if _, _, err := s.current(); err != nil {
		return err
	}
	n, ok := s.b.(LockNoter)
	if !ok {
		return ErrUnsupported
	}
	return n.SetLockNote(note)
}

func (b *engineBackend) SetLockNote(note string) error { return b.db.SetLockNote(note) }
