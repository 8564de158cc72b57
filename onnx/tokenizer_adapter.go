package onnx

import (
	"fmt"

	"github.com/engramdb/engram/onnx/tokenizer"
)

// hfTokenizer adapts onnx/tokenizer to Tokenizer: truncation at the
// embedder's MaxTokens, no padding (batches are padded by the embedder).
type hfTokenizer struct{ t *tokenizer.Tokenizer }

// NewTokenizer loads a Hugging Face tokenizer.json that truncates encodings
// to maxTokens tokens, special tokens included.
func NewTokenizer(path string, maxTokens int) (Tokenizer, error) {
	t, err := tokenizer.Load(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	if t, err = t.WithTruncation(maxTokens); err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	if t, err = t.WithPadding(tokenizer.Padding{Strategy: tokenizer.PadNone}); err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	return hfTokenizer{t}, nil
}

func (h hfTokenizer) Encode(text string) ([]int32, bool, error) {
	e, err := h.t.Encode(text)
	return e.IDs, e.Truncated, err
}

func (h hfTokenizer) PadID() int32 { return h.t.PadID() }
