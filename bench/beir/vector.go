package beir

import (
	"context"
	"fmt"
	"slices"

	"github.com/engramdb/engram/quant"
)

// Embedder is the memory layer's embedding contract (docs/architecture.md).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dim() int
	Fingerprint() string
}

// TopKDot returns the indexes of the k vectors of docs with the largest dot
// product with q (cosine for L2-normalized vectors), best first, ties by
// lower index: exact brute-force search, the ground truth for a vector index.
func TopKDot(docs [][]float32, q []float32, k int) []int {
	type scored struct {
		i int
		s float32
	}
	top := make([]scored, 0, k+1)
	for i, d := range docs {
		s := quant.DotFloat32(d, q)
		if len(top) == k && s <= top[k-1].s {
			continue
		}
		j, _ := slices.BinarySearchFunc(top, s, func(e scored, s float32) int {
			if e.s >= s {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, j, scored{i, s})
		if len(top) > k {
			top = top[:k]
		}
	}
	out := make([]int, len(top))
	for i, t := range top {
		out[i] = t.i
	}
	return out
}

// EmbedCorpus embeds every document's Content in batches of batch texts.
func EmbedCorpus(ctx context.Context, e Embedder, docs []Doc, batch int) ([][]float32, error) {
	out := make([][]float32, 0, len(docs))
	texts := make([]string, 0, batch)
	for i := 0; i < len(docs); i += batch {
		texts = texts[:0]
		for _, d := range docs[i:min(i+batch, len(docs))] {
			texts = append(texts, d.Content())
		}
		vs, err := e.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("beir: embedding documents %d..: %w", i, err)
		}
		out = append(out, vs...)
	}
	return out, nil
}
