package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/onnx"
)

// TestModelPullInt8 pulls `model pull bge-m3 --int8` from a local stand-in for the hub serving
// the int8 test model under the published export's names, then loads it with `model info` next to
// the fp32 tiny model: the int8 export is a model of its own (another fingerprint).
func TestModelPullInt8(t *testing.T) {
	isolate(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	read := func(rel string) []byte {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	files := map[string][]byte{
		"/" + onnx.BGEM3Int8.Repo + "/resolve/main/onnx/model_quantized.onnx": read("testdata/model/tiny-int8/model.onnx"),
		"/" + onnx.BGEM3Int8.Repo + "/resolve/main/tokenizer.json":            read("testdata/tokenizer/tiny/tokenizer.json"),
	}
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path)
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		sum := sha256.Sum256(b)
		w.Header().Set("X-Linked-Etag", `"`+hex.EncodeToString(sum[:])+`"`)
		w.Write(b)
	}))
	defer srv.Close()

	store := filepath.Join(t.TempDir(), "store")
	dir := filepath.Join(t.TempDir(), "int8")
	var pulled []onnx.PulledFile
	if err := json.Unmarshal([]byte(mustRun(t, store, "", "--json", "model", "pull", "bge-m3", "--int8", "--hub", srv.URL, dir)), &pulled); err != nil {
		t.Fatal(err)
	}
	if len(pulled) != 2 || len(asked) != 2 {
		t.Fatalf("pulled %+v, server asked for %q", pulled, asked)
	}
	for _, p := range pulled {
		if !p.Verified {
			t.Fatalf("%s not verified against the hub's sha256", p.Name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "onnx", "model_quantized.onnx")); err != nil {
		t.Fatal(err)
	}

	if _, err := onnx.RuntimeLibraryPath(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but ONNX Runtime is missing: %v", err)
		}
		t.Skipf("ONNX Runtime not installed: %v", err)
	}
	fp32 := t.TempDir()
	for src, dst := range map[string]string{
		"testdata/model/tiny/model.onnx": "model.onnx", "testdata/model/tiny/model.onnx_data": "model.onnx_data",
		"testdata/tokenizer/tiny/tokenizer.json": "tokenizer.json",
	} {
		if err := os.WriteFile(filepath.Join(fp32, dst), read(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	info := func(d string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(mustRun(t, store, "", "--json", "model", "info", d)), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := info(dir), info(fp32)
	if a["fingerprint"] == b["fingerprint"] || !strings.HasPrefix(a["provider"].(string), "cpu") || a["dim"] != b["dim"] {
		t.Fatalf("int8 model info %v, fp32 %v: want the same dimension and another fingerprint", a, b)
	}
}
