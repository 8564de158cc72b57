package onnx

import (
	"go/build"
	"strings"
	"testing"
)

// TestDependsOnlyOnTokenizer guards the layering in docs/architecture.md: the
// embedder links to the memory layer only through the structural Embedder
// interface, so onnx imports no engram package but its tokenizer.
func TestDependsOnlyOnTokenizer(t *testing.T) {
	const module = "github.com/engramdb/engram/"
	seen := map[string]bool{}
	var walk func(path, dir string)
	walk = func(path, dir string) {
		if seen[path] {
			return
		}
		seen[path] = true
		p, err := build.Import(path, dir, 0)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				if imp != module+"onnx/tokenizer" {
					t.Errorf("%s imports %s", path, imp)
				}
				walk(imp, p.Dir)
			}
		}
	}
	walk(module+"onnx", ".")
}
