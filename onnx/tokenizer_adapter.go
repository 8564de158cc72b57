package onnx

import "errors"

// NewTokenizer TEMPORARY until onnx/tokenizer lands.
func NewTokenizer(path string) (Tokenizer, error) {
	return nil, errors.New("onnx: tokenizer package not available yet")
}
