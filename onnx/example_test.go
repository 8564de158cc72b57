package onnx_test

import (
	"context"
	"fmt"
	"log"
	"path/filepath"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/onnx"
)

// The embedder plugs into the memory layer.
var _ memory.Embedder = (*onnx.Embedder)(nil)

// Fetch BGE-M3's ONNX export once, then embed with it.
func Example() {
	dir := filepath.Join("models", "bge-m3")
	opts := onnx.BGEM3
	opts.Dir = dir
	opts.Progress = func(p onnx.PullProgress) { fmt.Printf("\r%s %d/%d", p.File, p.Done, p.Total) }
	if _, err := onnx.Pull(context.Background(), opts); err != nil {
		log.Fatal(err)
	}
	e, err := onnx.Open(onnx.Options{
		ModelPath:     filepath.Join(dir, "onnx", "model.onnx"),
		TokenizerPath: filepath.Join(dir, "onnx", "tokenizer.json"),
		MaxTokens:     1024, // shorter than the 8192 context: less memory per batch
	})
	if err != nil {
		log.Fatal(err) // e.g. ONNX Runtime missing: the error says to run scripts/setup.sh
	}
	defer e.Close()
	vecs, err := e.Embed(context.Background(), []string{"local-first memory", "ローカルファースト"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(vecs), e.Dim(), e.Fingerprint())
}
