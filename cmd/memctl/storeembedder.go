package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/engramdb/engram/memory"
)

// A store records the embedder it was opened with (memory.Store.RecordEmbedder: kind and
// location, e.g. onnx and the model directory), so commands find it without --embedder. An
// explicit --embedder (flag, ENGRAM_EMBEDDER or the config file) wins; without one and without
// a record, the built-in lexical embedder is used.

// embedderFor returns the --embedder value to use given the store's recorded spec.
func (a *app) embedderFor(rec *memory.EmbedderSpec) string {
	switch {
	case a.embedder != "":
		return a.embedder
	case rec != nil:
		return rec.String()
	}
	return "lexical"
}

// splitSpec parses an --embedder value into the kind and location to record; an onnx model
// directory is made absolute, so the record holds wherever memctl runs from.
func splitSpec(spec string) (kind, location string) {
	kind, location, _ = strings.Cut(spec, ":")
	if kind == "" {
		kind = "lexical"
	}
	if kind == "onnx" && location != "" {
		if abs, err := filepath.Abs(location); err == nil {
			location = abs
		}
	}
	return kind, location
}

// recordEmbedder records spec as the store's embedder; a failure is reported, not fatal (the
// command did its work; the next one needs --embedder).
func (a *app) recordEmbedder(s *memory.Store, spec string) {
	kind, loc := splitSpec(spec)
	if err := s.RecordEmbedder(kind, loc); err != nil {
		fmt.Fprintf(a.stderr, "memctl: recording the embedder %s in the store: %v\n", spec, err)
	}
}

// explainMismatch rewrites a model mismatch in CLI terms: which --embedder opens the store and
// which command moves it to another model.
func (a *app) explainMismatch(err error, used string, rec *memory.EmbedderSpec) error {
	var mm *memory.ModelMismatchError
	if !errors.As(err, &mm) {
		return err
	}
	orig := "the embedder it was built with"
	if rec != nil && rec.Fingerprint == mm.Stored {
		orig = "--embedder " + rec.String()
	}
	return fmt.Errorf("%w\nthe store's memories were embedded with model %s (dim %d), --embedder %s is %s (dim %d): "+
		"open the store with %s, or move it to the new model with `memctl reembed --to %s`",
		memory.ErrModelMismatch, mm.Stored, mm.StoredDim, used, mm.Embedder, mm.Dim, orig, used)
}
