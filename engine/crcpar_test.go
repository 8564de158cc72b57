package engine

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestCRCParallel: the chunked checksum equals the sequential one for
// every split, including chunks of one byte and uneven tails.
func TestCRCParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8)) // more chunks than this machine has cores
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 7, 64, 1000, 4097, 1 << 16} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		want := crc(b)
		for _, chunk := range []int{1, 3, 64, 1000, n + 1} {
			if got := crcParallel(b, chunk); got != want {
				t.Fatalf("n=%d chunk=%d: %08x, want %08x", n, chunk, got, want)
			}
		}
		for cut := 0; cut <= n; cut += max(1, n/7) {
			if got := crcCombine(crc(b[:cut]), crc(b[cut:]), int64(n-cut)); got != want {
				t.Fatalf("n=%d cut=%d: combine %08x, want %08x", n, cut, got, want)
			}
		}
	}
}
