package memory

import (
	"context"
	"strings"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory/lexical"
)

// Fusion parameters of the built-in lexical embedder: equal weights, and a vector gate of 0.8
// (see FusionWeighted), so that its cosine reorders only the memories BM25 already ranks near its
// best. Its vectors see the words BM25 sees, without IDF: ungated, at any weight, they lower
// locomo-dev below BM25 alone while raising the BEIR-style sets; gated, hybrid recall is at
// least BM25 on all six sets of bench/results/retrieval.md. Open uses the weights and Recall the
// gate whenever the store's embedder is the lexical one.
const (
	LexicalVectorWeight  = 0.5
	LexicalKeywordWeight = 0.5
	LexicalVectorGate    = 0.8
)

// OpenOptions add the engine's settings to Options for Open.
type OpenOptions struct {
	Options
	Engine engine.Options
	// EmbedderFrom, when set and Options.Embedder is nil, builds the embedder from the spec
	// recorded in the store (Store.RecordEmbedder; nil when none is recorded). Returning nil
	// means the built-in lexical embedder.
	EmbedderFrom func(recorded *EmbedderSpec) (Embedder, error)
}

// Open opens (or creates) a store in dir backed by the embedded engine, and a Store over it;
// without an Embedder it uses the built-in lexical one (package memory/lexical) and, unless set,
// the fusion weights LexicalVectorWeight and LexicalKeywordWeight. Close closes both.
func Open(dir string, opts OpenOptions) (*Store, error) {
	db, err := engine.Open(dir, opts.Engine)
	if err != nil {
		return nil, err
	}
	b := NewEngineBackend(db)
	if opts.Embedder == nil && opts.EmbedderFrom != nil {
		var rec *EmbedderSpec
		spec, ok, err := RecordedEmbedder(b)
		if ok {
			rec = &spec
		}
		if err == nil {
			opts.Embedder, err = opts.EmbedderFrom(rec)
		}
		if err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	if opts.Embedder == nil {
		e, err := lexical.New(lexical.Options{})
		if err != nil {
			_ = db.Close()
			return nil, err
		}
		opts.Embedder = e
		if opts.VectorWeight == 0 && opts.KeywordWeight == 0 {
			opts.VectorWeight, opts.KeywordWeight = LexicalVectorWeight, LexicalKeywordWeight
		}
	}
	s, err := New(context.Background(), b, opts.Options)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// LexicalNote tells a user what the built-in lexical embedder cannot do; the quickstart, recall
// --explain and the README say it where a user of that embedder looks.
const LexicalNote = "The built-in embedder matches words and character n-grams, not meaning: a question " +
	"that shares no word with its answer (a paraphrase, a synonym, another language) needs a model. " +
	"Get BGE-M3 with `memctl model pull bge-m3`, then `memctl reembed --to onnx:DIR` (DIR as model pull prints it)."

// IsLexical reports whether e is the built-in lexical embedder (by its fingerprint, so a store
// reopened by another program still answers).
func IsLexical(e Embedder) bool {
	return e != nil && IsLexicalFingerprint(e.Fingerprint())
}

// IsLexicalFingerprint reports whether an embedder fingerprint (Stats.Fingerprint, what a
// server's statistics say) is the built-in lexical embedder's.
func IsLexicalFingerprint(fp string) bool { return strings.HasPrefix(fp, "lexical/") }
