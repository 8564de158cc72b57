package memory

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// keyEmbedder holds the store's EmbedderSpec (JSON).
const keyEmbedder = "memory/embedder"

// EmbedderSpec says how to rebuild a store's embedder: a kind and its location (for memctl:
// "lexical", "onnx" with a model directory, "ollama" with a model name), with the fingerprint
// and dimension of the model it stood for when it was recorded. The memory layer stores it and
// hands it back; what a kind means is up to the caller. A collection's own fingerprint remains
// the model lock: an embedder rebuilt from a spec whose model changed fails New's check.
type EmbedderSpec struct {
	Kind        string `json:"kind"`
	Location    string `json:"location,omitempty"`
	Fingerprint string `json:"fingerprint"`
	Dim         int    `json:"dim"`
}

// String renders the spec as kind or kind:location.
func (e EmbedderSpec) String() string {
	if e.Location == "" {
		return e.Kind
	}
	return e.Kind + ":" + e.Location
}

// RecordedEmbedder returns the spec recorded in b by Store.RecordEmbedder, if any.
func RecordedEmbedder(b Backend) (EmbedderSpec, bool, error) {
	var e EmbedderSpec
	v, ok, err := b.KV().Get(keyEmbedder)
	if err != nil || !ok {
		return e, false, err
	}
	if err := json.Unmarshal(v, &e); err != nil {
		return e, false, fmt.Errorf("memory: decoding %s: %w", keyEmbedder, err)
	}
	return e, true, nil
}

// RecordedEmbedder returns the spec recorded in the store, if any.
func (s *Store) RecordedEmbedder() (EmbedderSpec, bool, error) {
	if _, _, err := s.current(); err != nil {
		return EmbedderSpec{}, false, err
	}
	return RecordedEmbedder(s.b)
}

// RecordEmbedder records how to rebuild the store's current embedder (kind and location; the
// fingerprint and dimension are taken from the embedder), so that later opens need not be told.
// Writing the same spec again writes nothing.
func (s *Store) RecordEmbedder(kind, location string) error {
	if strings.TrimSpace(kind) == "" || len(kind)+len(location) > 4096 || !utf8.ValidString(kind+location) {
		return errorf(ErrInvalidInput, "an embedder spec needs a kind, and at most 4 KiB of UTF-8")
	}
	_, emb, err := s.current()
	if err != nil {
		return err
	}
	spec := EmbedderSpec{Kind: kind, Location: location, Fingerprint: emb.Fingerprint(), Dim: emb.Dim()}
	if old, ok, err := RecordedEmbedder(s.b); err == nil && ok && old == spec {
		return nil
	}
	return s.putJSON(keyEmbedder, spec)
}
