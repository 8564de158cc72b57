package engine

import (
	"errors"
	"fmt"
	"io"

	"github.com/engramdb/engram/internal/crypt"
)

// Sealed streams: a file sealed under a passphrase or key file of its own,
// apart from any store's KEYS (docs/format/export.md, "Sealed exports"). An
// export to be kept or moved elsewhere is written through one.

// IsSealedStream reports whether prefix, the first bytes of a file (8 are
// enough), begins a sealed stream.
func IsSealedStream(prefix []byte) bool { return crypt.IsSealedStream(prefix) }

// NewSealedWriter writes a sealed stream's header to w, derived from key,
// and returns the writer for its body. Close seals the last chunk and must
// be called: a stream without it reads as truncated. Close does not close w.
func NewSealedWriter(w io.Writer, key *Key) (io.WriteCloser, error) {
	if key == nil {
		return nil, fmt.Errorf("%w: a sealed stream needs a passphrase or key file", ErrInvalid)
	}
	s, err := key.secret()
	if err != nil {
		return nil, err
	}
	sw, err := crypt.NewStreamWriter(w, s, key.kdf())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return sw, nil
}

// NewSealedReader checks a sealed stream's header and returns a reader of
// its plaintext. ErrWrongKey: the header is intact and key does not open it;
// ErrCorrupt: the header is damaged or r is not a sealed stream. Reads fail
// with ErrCorrupt when a chunk is damaged, reordered, missing or the stream
// is cut short: no byte of a chunk is returned before the chunk is
// authenticated.
func NewSealedReader(r io.Reader, key *Key) (io.Reader, error) {
	if key == nil {
		return nil, fmt.Errorf("%w: this file is sealed: give its passphrase or key file", ErrKeyRequired)
	}
	s, err := key.secret()
	if err != nil {
		return nil, err
	}
	sr, err := crypt.NewStreamReader(r, s)
	if err != nil {
		return nil, streamErr(err)
	}
	return sealedReader{sr}, nil
}

type sealedReader struct{ r *crypt.StreamReader }

func (s sealedReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		err = streamErr(err)
	}
	return n, err
}

func streamErr(err error) error {
	switch {
	case errors.Is(err, crypt.ErrWrongKey):
		return fmt.Errorf("%w: %v", ErrWrongKey, err)
	case errors.Is(err, crypt.ErrCorrupt), errors.Is(err, crypt.ErrAuth):
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	case errors.Is(err, crypt.ErrInvalid):
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return err
}
