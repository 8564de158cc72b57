package importer

import (
	"fmt"
	"strings"
	"unicode"
)

// VectorPolicy says when a source's vectors are used (see the package documentation).
type VectorPolicy int

// The vector policies.
const (
	// VectorsAuto uses the source's vectors when their dimension is the store's and the
	// source names a model that matches the store's embedder (ModelMatches).
	VectorsAuto VectorPolicy = iota
	// VectorsKeep uses them whenever the dimension is the store's.
	VectorsKeep
	// VectorsReembed never uses them: the store embeds every text again.
	VectorsReembed
)

// ParseVectorPolicy reads "auto", "keep" or "reembed".
func ParseVectorPolicy(s string) (VectorPolicy, error) {
	switch s {
	case "", "auto":
		return VectorsAuto, nil
	case "keep":
		return VectorsKeep, nil
	case "reembed":
		return VectorsReembed, nil
	}
	return 0, fmt.Errorf("vectors %q: want auto, keep or reembed", s)
}

func (p VectorPolicy) String() string {
	switch p {
	case VectorsKeep:
		return "keep"
	case VectorsReembed:
		return "reembed"
	}
	return "auto"
}

// Model describes the store's embedder.
type Model struct {
	Fingerprint string
	Dim         int
	// Spec is how the store rebuilds its embedder ("onnx:/models/all-MiniLM-L6-v2",
	// "ollama:nomic-embed-text"), when known.
	Spec string
}

// UseVectors decides whether vectors of dimension dim, made by the model the source names
// (sourceModel, "" when it names none), go into a store of model m under policy p, and if
// not, says why.
func (m Model) UseVectors(p VectorPolicy, sourceModel string, dim int) (bool, string) {
	switch {
	case p == VectorsReembed:
		return false, "--vectors reembed"
	case dim != 0 && dim != m.Dim:
		return false, fmt.Sprintf("the source's vectors have %d dimensions, the store's model %d", dim, m.Dim)
	case p == VectorsAuto && sourceModel == "":
		return false, "the source does not name its embedding model (--vectors keep uses its vectors when it is the store's)"
	case dim == 0:
		return false, "the source has no vectors"
	case p == VectorsKeep:
		return true, ""
	case !ModelMatches(sourceModel, m):
		return false, fmt.Sprintf("the source's model %q is not the store's (%s)", sourceModel, m.describe())
	}
	return true, ""
}

func (m Model) describe() string {
	if m.Spec != "" {
		return m.Spec
	}
	return m.Fingerprint
}

// ModelMatches reports whether the model name a source records (e.g. "all-MiniLM-L6-v2")
// names the store's embedder: compared without case and punctuation, it must appear in the
// embedder's spec or fingerprint (an ONNX model directory or an Ollama model name).
func ModelMatches(sourceModel string, m Model) bool {
	want := squash(sourceModel)
	if len(want) < 3 {
		return false
	}
	return strings.Contains(squash(m.Spec), want) || strings.Contains(squash(m.Fingerprint), want)
}

func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, s)
}
