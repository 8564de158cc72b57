package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestCodeDistances(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	check := func(path string) {
		for _, dim := range testLengths[1:] {
			const n = 50
			codes := randInt8(r, n*dim)
			q := randInt8(r, dim)
			ids := []uint32{n - 1, 0, 7, 7, 3, n - 1, 1, 2, 9, 31, 30, 44}
			for _, m := range []Metric{L2, Dot, Cosine} {
				for _, k := range []int{0, 1, len(ids)} {
					dst := make([]int32, k)
					if err := CodeDistances(m, dst, q, codes, ids[:k]); err != nil {
						t.Fatal(err)
					}
					for i, id := range ids[:k] {
						if want := CodeDistance(m, q, codes[int(id)*dim:(int(id)+1)*dim]); dst[i] != want {
							t.Fatalf("%s %v dim=%d id=%d: got %d want %d", path, m, dim, id, dst[i], want)
						}
					}
				}
			}
		}
		// Extremes, where a wrong bias or saturation would show.
		for _, p := range int8Patterns[1:] {
			dim := 100
			codes, q := make([]int8, 3*dim), make([]int8, dim)
			p.fill(r, q, codes[dim:2*dim])
			dst := make([]int32, 1)
			for _, m := range []Metric{L2, Dot} {
				if err := CodeDistances(m, dst, q, codes, []uint32{1}); err != nil {
					t.Fatal(err)
				}
				if want := CodeDistance(m, q, codes[dim:2*dim]); dst[0] != want {
					t.Fatalf("%s %v %s: got %d want %d", path, m, p.name, dst[0], want)
				}
			}
		}
	}
	check(selectedKernels())
	restore := setFeatures(false, false)
	check("generic")
	restore()
}

func TestCodeDistancesErrors(t *testing.T) {
	codes := make([]int8, 40) // 4 codes of dim 10, plus nothing
	q := make([]int8, 10)
	dst := []int32{7, 7}
	cases := []struct {
		name  string
		dst   []int32
		q     []int8
		codes []int8
		ids   []uint32
	}{
		{"id past end", dst, q, codes, []uint32{0, 4}},
		{"huge id", dst, q, codes, []uint32{1 << 31, 0}},
		{"partial last code", dst, q, codes[:39], []uint32{0, 3}},
		{"dst length", dst[:1], q, codes, []uint32{0, 1}},
		{"empty query", dst, nil, codes, []uint32{0, 1}},
	}
	for _, c := range cases {
		if err := CodeDistances(L2, c.dst, c.q, c.codes, c.ids); err == nil {
			t.Errorf("%s: no error", c.name)
		}
		if dst[0] != 7 || dst[1] != 7 {
			t.Fatalf("%s: dst written on error", c.name)
		}
	}
}

// BenchmarkCodeDistances compares the prefetching gather kernel with a loop
// of single-pair calls, on neighbour lists of 32 random ids into 64 MiB of
// codes (far larger than the caches, like a big graph).
func BenchmarkCodeDistances(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	codes := streamInt8()[:64<<20]
	for _, dim := range []int{100, 128, 1024} {
		n := len(codes) / dim
		lists := make([][]uint32, 1024)
		for i := range lists {
			lists[i] = make([]uint32, 32)
			for j := range lists[i] {
				lists[i][j] = uint32(r.IntN(n))
			}
		}
		q := randInt8(r, dim)
		dst := make([]int32, 32)
		b.Run(fmt.Sprintf("gather/dim=%d", dim), func(b *testing.B) {
			m := startCPU(b, int64(32*dim))
			i := 0
			for b.Loop() {
				if err := CodeDistances(Dot, dst, q, codes, lists[i&1023]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			m.stop()
		})
		b.Run(fmt.Sprintf("loop/dim=%d", dim), func(b *testing.B) {
			m := startCPU(b, int64(32*dim))
			i := 0
			for b.Loop() {
				for j, id := range lists[i&1023] {
					dst[j] = CodeDistance(Dot, q, codes[int(id)*dim:(int(id)+1)*dim])
				}
				i++
			}
			m.stop()
		})
	}
}
