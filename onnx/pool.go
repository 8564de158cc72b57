package onnx

import "math"

// Pooling says how a model output becomes one vector per text.
type Pooling string

const (
	// PoolCLS takes the first token's row of a [batch, seq, dim] output
	// (last_hidden_state) and L2-normalizes it: BGE-M3's dense embedding.
	PoolCLS Pooling = "cls"
	// PoolNone uses a [batch, dim] output (sentence_embedding, dense_vecs)
	// as it is: the model has pooled and normalized already.
	PoolNone Pooling = "none"
)

// normalize scales v to unit L2 length in place; a zero vector stays zero.
func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}
