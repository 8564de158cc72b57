package ollama

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Embedder computes embeddings with a model served by a local Ollama
// server (POST /api/embed through the ollama package, which owns timeouts,
// retries on a refused connection and error reporting). It is safe for
// concurrent use.
type Embedder struct {
	client   *Client
	model    string
	dim      int
	maxBatch int
}

// EmbedderOptions configures NewEmbedder.
type EmbedderOptions struct {
	Model string // e.g. "bge-m3"; required
	// MaxBatch bounds the inputs sent in one request. Default 64.
	MaxBatch int
}

// NewEmbedder returns an embedder over client. It embeds one short text to
// learn the dimension, so it fails early when the server is down or lacks
// the model.
func NewEmbedder(ctx context.Context, client *Client, opts EmbedderOptions) (*Embedder, error) {
	if client == nil {
		return nil, errors.New("ollama: NewEmbedder: nil client")
	}
	if opts.Model == "" {
		return nil, errors.New("ollama: NewEmbedder: EmbedderOptions.Model is required")
	}
	if opts.MaxBatch < 0 {
		return nil, fmt.Errorf("ollama: NewEmbedder: negative MaxBatch %d", opts.MaxBatch)
	}
	e := &Embedder{client: client, model: opts.Model, maxBatch: cmp.Or(opts.MaxBatch, 64)}
	v, err := e.Embed(ctx, []string{"dimension probe"})
	if err != nil {
		return nil, err
	}
	if len(v[0]) == 0 {
		return nil, fmt.Errorf("ollama: ollama model %q returned an empty embedding", opts.Model)
	}
	e.dim = len(v[0])
	return e, nil
}

// Embed returns one vector per text, in order, as the server computes it
// (Ollama L2-normalizes). An empty batch gives an empty result; invalid
// UTF-8 is an error (JSON would silently replace it).
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for i, t := range texts {
		if !utf8.ValidString(t) {
			return nil, fmt.Errorf("ollama: text %d is not valid UTF-8", i)
		}
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.maxBatch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		chunk := texts[start:min(start+e.maxBatch, len(texts))]
		vecs, err := e.client.Embed(ctx, e.model, chunk)
		if err != nil {
			return nil, fmt.Errorf("ollama: ollama embed with %q: %w", e.model, err)
		}
		for i, v := range vecs {
			if len(v) == 0 || (e.dim != 0 && len(v) != e.dim) {
				return nil, fmt.Errorf("ollama: ollama model %q returned a %d-dimensional vector for text %d, want %d",
					e.model, len(v), start+i, e.dim)
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// Dim is the embedding dimension.
func (e *Embedder) Dim() int { return e.dim }

// Fingerprint names the server's model and dimension. Ollama's embed API
// does not report the weights' digest: a model re-pulled under the same
// name is not told apart.
func (e *Embedder) Fingerprint() string {
	return fmt.Sprintf("ollama:%s:dim=%d", e.model, e.dim)
}

// Close does nothing; it is there so both embedders close the same way.
func (e *Embedder) Close() error { return nil }
