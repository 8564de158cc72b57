package quant

import "fmt"

// CodeDistances writes CodeDistance(m, q, code(id)) into dst[i] for every
// ids[i], where code(id) is codes[id*len(q) : (id+1)*len(q)]: the distances
// from a query to the neighbours of a graph node in one call. On AVX-512 it
// prefetches each next code while computing the current one, which hides
// much of the latency of scattered loads. dst must have len(ids) elements.
// It returns an error, and writes nothing, if an id's code lies outside
// codes or the lengths do not fit.
func CodeDistances(m Metric, dst []int32, q, codes []int8, ids []uint32) error {
	if len(dst) != len(ids) {
		return fmt.Errorf("quant: %d distances for %d ids", len(dst), len(ids))
	}
	dim := uint64(len(q))
	if dim == 0 {
		return fmt.Errorf("quant: empty query code")
	}
	n := uint64(len(codes)) / dim
	for _, id := range ids {
		if uint64(id) >= n {
			return fmt.Errorf("quant: id %d outside the %d codes", id, n)
		}
	}
	if !codeDistancesSIMD(m == L2, dst, q, codes, ids) {
		for i, id := range ids {
			c := codes[uint64(id)*dim : (uint64(id)+1)*dim]
			if m == L2 {
				dst[i] = l2SqInt8(q, c)
			} else {
				dst[i] = dotInt8(q, c)
			}
		}
	}
	if m != L2 {
		for i := range dst {
			dst[i] = -dst[i]
		}
	}
	return nil
}
