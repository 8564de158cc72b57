package engine

import (
	"runtime"
	"sync"
)

// Large sections are checksummed on every core: the first vector search
// after Open verifies the whole graph section (about 5.4 KB per 1024-d
// record), and CRC32C runs at a few GB/s per core. Chunk checksums are
// joined with crcCombine, so the result is the section's CRC32C as
// written.

// parallelCRCChunk is the smallest chunk worth a goroutine.
const parallelCRCChunk = 32 << 20

// crcParallel is crc(b), computed in up to GOMAXPROCS chunks of at least
// minChunk bytes.
func crcParallel(b []byte, minChunk int) uint32 {
	k := min(runtime.GOMAXPROCS(0), len(b)/max(minChunk, 1))
	if k <= 1 {
		return crc(b)
	}
	size := (len(b) + k - 1) / k
	sums := make([]uint32, k)
	var wg sync.WaitGroup
	for i := range k {
		lo, hi := i*size, min((i+1)*size, len(b))
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[i] = crc(b[lo:hi])
		}()
	}
	wg.Wait()
	sum := sums[0]
	for i := 1; i < k; i++ {
		lo, hi := i*size, min((i+1)*size, len(b))
		sum = crcCombine(sum, sums[i], int64(hi-lo))
	}
	return sum
}

// crcCombine returns the CRC32C of A||B from crc1 = CRC32C(A), crc2 =
// CRC32C(B) and len2 = len(B) (zlib's crc32_combine: crc1 is advanced over
// len2 zero bytes by squaring the one-zero-bit operator in GF(2)).
func crcCombine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1 ^ crc2 ^ crc(nil)
	}
	var even, odd [32]uint32
	odd[0] = 0x82f63b78 // Castagnoli, reflected
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four
	for {
		gf2Square(&even, &odd)
		if len2&1 != 0 {
			crc1 = gf2Times(&even, crc1)
		}
		if len2 >>= 1; len2 == 0 {
			break
		}
		gf2Square(&odd, &even)
		if len2&1 != 0 {
			crc1 = gf2Times(&odd, crc1)
		}
		if len2 >>= 1; len2 == 0 {
			break
		}
	}
	return crc1 ^ crc2
}

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := range mat {
		square[n] = gf2Times(mat, mat[n])
	}
}
