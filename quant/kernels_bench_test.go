package quant

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// The benchmarks report GB/s of vector data the kernel reads (b.SetBytes).
//
// "cache": the two operands stay in L1/L2, so this measures the kernel.
// "stream": one query (in cache) against consecutive vectors of a buffer
// much larger than the L3, like a brute-force scan; only the streamed bytes
// are counted, so the figure is comparable with BenchmarkMemory.

var benchDims = []int{128, 768, 1024}

const streamBytes = 256 << 20

var (
	streamOnce sync.Once
	streamBuf  []float32 // streamBytes of small floats; also read as int8
)

func streamData() []float32 {
	streamOnce.Do(func() {
		r := rand.New(rand.NewPCG(7, 8))
		streamBuf = make([]float32, streamBytes/4)
		for i := range streamBuf {
			streamBuf[i] = float32(r.NormFloat64())
		}
	})
	return streamBuf
}

func streamInt8() []int8 {
	f := streamData()
	return unsafe.Slice((*int8)(unsafe.Pointer(&f[0])), len(f)*4)
}

func randInt8(r *rand.Rand, n int) []int8 {
	v := make([]int8, n)
	for i := range v {
		v[i] = int8(r.IntN(256) - 128)
	}
	return v
}

func randFloat32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// cpuMeter reports GB/s per CPU-second of the benchmarking thread next to
// the wall-clock MB/s that b.SetBytes gives.
type cpuMeter struct {
	b     *testing.B
	bytes int64
	start time.Duration
}

func startCPU(b *testing.B, bytes int64) *cpuMeter {
	b.SetBytes(bytes)
	runtime.LockOSThread()
	return &cpuMeter{b, bytes, threadCPU()}
}

func (m *cpuMeter) stop() {
	cpu := threadCPU() - m.start
	runtime.UnlockOSThread()
	if cpu > 0 {
		m.b.ReportMetric(float64(m.bytes)*float64(m.b.N)/cpu.Seconds()/1e9, "cpu-GB/s")
	}
}

var sinkI int32
var sinkF float32

func BenchmarkKernels(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, ks := range availableKernels() {
		for _, dim := range benchDims {
			qa, qb := randInt8(r, dim), randInt8(r, dim)
			fa, fb := randFloat32(r, dim), randFloat32(r, dim)
			int8Kernels := []struct {
				name string
				f    func(a, b []int8) int32
			}{{"DotInt8", ks.dotInt8}, {"L2SqInt8", ks.l2SqInt8}}
			for _, k := range int8Kernels {
				b.Run(fmt.Sprintf("%s/%s/dim=%d/cache", k.name, ks.name, dim), func(b *testing.B) {
					m := startCPU(b, int64(2*dim))
					var s int32
					for b.Loop() {
						s += k.f(qa, qb)
					}
					m.stop()
					sinkI = s
				})
				b.Run(fmt.Sprintf("%s/%s/dim=%d/stream", k.name, ks.name, dim), func(b *testing.B) {
					codes := streamInt8()
					n := len(codes) / dim
					m := startCPU(b, int64(dim))
					var s int32
					i := 0
					for b.Loop() {
						s += k.f(qa, codes[i*dim:(i+1)*dim])
						if i++; i == n {
							i = 0
						}
					}
					m.stop()
					sinkI = s
				})
			}
			floatKernels := []struct {
				name string
				f    func(a, b []float32) float32
			}{{"DotFloat32", ks.dotFloat32}, {"L2SqFloat32", ks.l2SqFloat32}}
			for _, k := range floatKernels {
				b.Run(fmt.Sprintf("%s/%s/dim=%d/cache", k.name, ks.name, dim), func(b *testing.B) {
					m := startCPU(b, int64(8*dim))
					var s float32
					for b.Loop() {
						s += k.f(fa, fb)
					}
					m.stop()
					sinkF = s
				})
				b.Run(fmt.Sprintf("%s/%s/dim=%d/stream", k.name, ks.name, dim), func(b *testing.B) {
					vecs := streamData()
					n := len(vecs) / dim
					m := startCPU(b, int64(4*dim))
					var s float32
					i := 0
					for b.Loop() {
						s += k.f(fa, vecs[i*dim:(i+1)*dim])
						if i++; i == n {
							i = 0
						}
					}
					m.stop()
					sinkF = s
				})
			}
		}
	}
}

// BenchmarkMemory measures this machine's memory bandwidth on the same
// buffer the stream benchmarks read: "read" sums it with the fastest
// float kernel (a pure read, the stream kernels' access pattern at the
// largest step), "copy" is runtime memmove (bytes counted = read + written).
func BenchmarkMemory(b *testing.B) {
	buf := streamData()
	b.Run("read", func(b *testing.B) {
		m := startCPU(b, int64(len(buf)*4))
		half := len(buf) / 2
		var s float32
		for b.Loop() {
			s += dotFloat32(buf[:half], buf[half:])
		}
		m.stop()
		sinkF = s
	})
	b.Run("copy", func(b *testing.B) {
		dst := make([]float32, len(buf)/2)
		m := startCPU(b, int64(len(buf)/2*4*2))
		for b.Loop() {
			copy(dst, buf[len(buf)/2:])
		}
		m.stop()
	})
}
