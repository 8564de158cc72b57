package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
	"github.com/engramdb/engram/ollama"
	"github.com/engramdb/engram/onnx"
)

// newEmbedder builds the embedder a --embedder value names:
//
//	lexical          the built-in hashed n-gram embedder (no model, no server)
//	onnx:DIR         model.onnx + tokenizer.json in DIR through ONNX Runtime
//	ollama:MODEL     a local Ollama server's embedding model
func (a *app) newEmbedder(spec string) (memory.Embedder, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "lexical", "":
		return lexical.New(lexical.Options{})
	case "onnx":
		if arg == "" {
			return nil, usagef("--embedder onnx needs a model directory: onnx:DIR (get one with `memctl model pull bge-m3`)")
		}
		return openONNX(arg)
	case "ollama":
		if arg == "" {
			return nil, usagef("--embedder ollama needs a model name, e.g. ollama:bge-m3")
		}
		c, err := ollama.New(ollama.Config{BaseURL: a.ollamaURL})
		if err != nil {
			return nil, err
		}
		return ollama.NewEmbedder(context.Background(), c, ollama.EmbedderOptions{Model: arg})
	}
	return nil, usagef("unknown --embedder %q (want lexical, onnx:DIR or ollama:MODEL)", spec)
}

// openONNX opens the model in dir, accepting the layouts of a Hugging Face
// export: model.onnx at the top or under onnx/ (or the int8 export's
// onnx/model_quantized.onnx), tokenizer.json beside it or at the top.
func openONNX(dir string) (*onnx.Embedder, error) {
	find := func(names ...string) (string, error) {
		for _, n := range names {
			p := filepath.Join(dir, n)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		return "", fmt.Errorf("no %s in %s (get the model with `memctl model pull bge-m3`)", names[0], dir)
	}
	model, err := find("model.onnx", filepath.Join("onnx", "model.onnx"), filepath.Join("onnx", "model_quantized.onnx"))
	if err != nil {
		return nil, err
	}
	tok, err := find("tokenizer.json", filepath.Join("onnx", "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	return onnx.Open(onnx.Options{ModelPath: model, TokenizerPath: tok})
}
