package onnx

import "errors"

// NewTokenizer will load a Hugging Face tokenizer.json through onnx/tokenizer
// once that package is committed; until then only Options.Tokenizer works.
func NewTokenizer(path string, maxTokens int) (Tokenizer, error) {
	return nil, errors.New("onnx: tokenizer.json loading is not available yet (onnx/tokenizer not committed); set Options.Tokenizer")
}
