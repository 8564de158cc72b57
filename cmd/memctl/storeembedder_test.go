package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/onnx"
)

// tinyModelDir lays out the tiny ONNX test model as `memctl model pull` would.
func tinyModelDir(t *testing.T) string {
	t.Helper()
	if _, err := onnx.RuntimeLibraryPath(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but ONNX Runtime is missing: %v", err)
		}
		t.Skipf("ONNX Runtime not installed: %v", err)
	}
	dir := t.TempDir()
	for src, dst := range map[string]string{
		"testdata/model/tiny/model.onnx": "model.onnx", "testdata/model/tiny/model.onnx_data": "model.onnx_data",
		"testdata/tokenizer/tiny/tokenizer.json": "tokenizer.json",
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestStoreRemembersItsEmbedder: after `reembed --to onnx:DIR`, later commands open the store
// with that model without --embedder; a wrong --embedder gets an error naming CLI commands.
func TestStoreRemembersItsEmbedder(t *testing.T) {
	isolate(t)
	model := tinyModelDir(t)
	store := filepath.Join(t.TempDir(), "store")
	mustRun(t, store, "", "remember", "--session", "s", "The boat is moored in Porto.")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, model) // a relative path is recorded as an absolute one
	if err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, store, "", "reembed", "--to", "onnx:"+rel); !strings.Contains(out, "without --embedder") {
		t.Fatalf("reembed: %s", out)
	}
	if out := mustRun(t, store, "", "recall", "--session", "s", "boat Porto"); !strings.Contains(out, "Porto") {
		t.Fatalf("recall after reembed without --embedder:\n%s", out)
	}
	_, errOut, code := memctl(t, store, "", "--embedder", "lexical", "recall", "--session", "s", "boat")
	if code == exitOK || !strings.Contains(errOut, "--embedder onnx:"+model) || !strings.Contains(errOut, "memctl reembed --to lexical") || strings.Contains(errOut, "call Reembed") {
		t.Fatalf("recall with the wrong --embedder: exit %d\n%s", code, errOut)
	}
	// Back to lexical: recorded again.
	mustRun(t, store, "", "reembed", "--to", "lexical")
	if out := mustRun(t, store, "", "recall", "--session", "s", "boat Porto"); !strings.Contains(out, "Porto") {
		t.Fatalf("recall after reembed to lexical:\n%s", out)
	}
}
