package onnx

import "sort"

// attnRefLen is the sequence length at which the token budget and the
// attention budget agree: a batch may hold B sequences padded to T tokens
// when B*T <= budget (activations grow with tokens) and B*T*T <= budget*
// attnRefLen (attention scores grow with the square of the length). Short
// texts are bound by the first rule, long ones by the second.
const attnRefLen = 512

// planBatches groups the indexes of sequences with token counts lens into
// batches that respect the budgets above and hold at most maxBatch sequences.
// Sequences are sorted by length first, so a batch pads little (length
// buckets). With maxPad > 0 a batch also stops growing before its padded
// tokens would exceed maxPad times its real ones: on a CPU a batch saves
// little per token, so padding there is mostly waste. A sequence that alone
// exceeds the budget still gets a batch of its own: truncation, not
// batching, bounds a single text.
func planBatches(lens []int, budget, maxBatch int, maxPad float64) [][]int {
	order := make([]int, len(lens))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return lens[order[a]] < lens[order[b]] })

	var batches [][]int
	var cur []int
	real := 0 // tokens of cur before padding
	for _, i := range order {
		n, t := len(cur)+1, lens[i] // lens ascend, so t is the new padded length
		if len(cur) > 0 && (n > maxBatch || n*t > budget || n*t*t > budget*attnRefLen ||
			(maxPad > 0 && float64(n*t) > maxPad*float64(real+t))) {
			batches = append(batches, cur)
			cur, real = nil, 0
		}
		cur = append(cur, i)
		real += t
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// batchesInOrder cuts 0..n-1 into runs of maxBatch in order, padding each to
// its longest: what planBatches saves is measured against it.
func batchesInOrder(n, maxBatch int) [][]int {
	var out [][]int
	for lo := 0; lo < n; lo += maxBatch {
		b := make([]int, 0, maxBatch)
		for i := lo; i < min(lo+maxBatch, n); i++ {
			b = append(b, i)
		}
		out = append(out, b)
	}
	return out
}
