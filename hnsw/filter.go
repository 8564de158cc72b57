package hnsw

import (
	"fmt"
	"math/bits"
)

// Filter restricts a search to the ids it allows. Allow is called during
// traversal, possibly many times per id, and must be safe for concurrent use
// if the filter is shared between concurrent searches.
type Filter interface {
	Allow(id uint32) bool
}

// FilterFunc adapts a function to Filter.
type FilterFunc func(id uint32) bool

// Allow calls f(id).
func (f FilterFunc) Allow(id uint32) bool { return f(id) }

// Counter is implemented by filters that know how many ids they allow;
// Search uses it to choose an exact scan for very selective filters.
type Counter interface {
	Count() int
}

// Bitset is a Filter over ids 0..n-1 with one bit per id. Search tests it
// inline, without an interface call per node.
type Bitset struct {
	words []uint64
	count int
}

// NewBitset returns an empty Bitset for ids below n.
func NewBitset(n int) *Bitset {
	if n < 0 {
		n = 0
	}
	return &Bitset{words: make([]uint64, (n+63)/64)}
}

// Len is the number of ids the set can hold.
func (b *Bitset) Len() int { return len(b.words) * 64 }

// Set allows id. It returns an error when id is beyond the set's length.
func (b *Bitset) Set(id uint32) error {
	w := int(id >> 6)
	if w >= len(b.words) {
		return fmt.Errorf("%w: id %d beyond bitset length %d", ErrBadArgument, id, b.Len())
	}
	m := uint64(1) << (id & 63)
	if b.words[w]&m == 0 {
		b.words[w] |= m
		b.count++
	}
	return nil
}

// Clear disallows id (a no-op beyond the set's length).
func (b *Bitset) Clear(id uint32) {
	w := int(id >> 6)
	if w >= len(b.words) {
		return
	}
	m := uint64(1) << (id & 63)
	if b.words[w]&m != 0 {
		b.words[w] &^= m
		b.count--
	}
}

// Allow reports whether id is set.
func (b *Bitset) Allow(id uint32) bool {
	w := int(id >> 6)
	return w < len(b.words) && b.words[w]&(1<<(id&63)) != 0
}

// Count is the number of ids set.
func (b *Bitset) Count() int { return b.count }

// AppendIDs appends the ids set, in increasing order, to dst.
func (b *Bitset) AppendIDs(dst []uint32) []uint32 {
	for w, word := range b.words {
		for word != 0 {
			dst = append(dst, uint32(w*64+bitsTrailing(word)))
			word &= word - 1
		}
	}
	return dst
}

func bitsTrailing(w uint64) int { return bits.TrailingZeros64(w) }
