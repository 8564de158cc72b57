package quant

import (
	"math"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
)

var testLengths = []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 384, 768, 1024, 1536}

// int8Patterns fills a and b in ways that stress the SIMD paths: the
// extremes (-128 defeats the +128 bias trick if done wrong, 127*127 pairs
// saturate VPMADDUBSW-style int16 sums), alternations, and random data.
var int8Patterns = []struct {
	name string
	fill func(r *rand.Rand, a, b []int8)
}{
	{"random", func(r *rand.Rand, a, b []int8) {
		for i := range a {
			a[i], b[i] = int8(r.IntN(256)-128), int8(r.IntN(256)-128)
		}
	}},
	{"all-128", func(_ *rand.Rand, a, b []int8) { fill8(a, -128); fill8(b, -128) }},
	{"all127", func(_ *rand.Rand, a, b []int8) { fill8(a, 127); fill8(b, 127) }},
	{"-128x127", func(_ *rand.Rand, a, b []int8) { fill8(a, -128); fill8(b, 127) }},
	{"127x-128", func(_ *rand.Rand, a, b []int8) { fill8(a, 127); fill8(b, -128) }},
	{"alternating", func(_ *rand.Rand, a, b []int8) {
		for i := range a {
			if i%2 == 0 {
				a[i], b[i] = -128, 127
			} else {
				a[i], b[i] = 127, 127
			}
		}
	}},
	{"mixed-extremes", func(r *rand.Rand, a, b []int8) {
		ext := []int8{-128, -127, -1, 0, 1, 126, 127}
		for i := range a {
			a[i], b[i] = ext[r.IntN(len(ext))], ext[r.IntN(len(ext))]
		}
	}},
}

func fill8(v []int8, x int8) {
	for i := range v {
		v[i] = x
	}
}

func TestInt8KernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, ks := range availableKernels() {
		for _, p := range int8Patterns {
			for _, n := range testLengths {
				// Slices are cut from the middle of a larger buffer at an odd
				// offset so unaligned loads and reads past the end would show.
				bufA, bufB := make([]int8, n+67), make([]int8, n+67)
				a, b := bufA[3:3+n:3+n], bufB[5:5+n:5+n]
				p.fill(r, a, b)
				if got, want := ks.dotInt8(a, b), dotInt8Generic(a, b); got != want {
					t.Errorf("%s dotInt8 %s n=%d: got %d want %d", ks.name, p.name, n, got, want)
				}
				if got, want := ks.l2SqInt8(a, b), l2SqInt8Generic(a, b); got != want {
					t.Errorf("%s l2SqInt8 %s n=%d: got %d want %d", ks.name, p.name, n, got, want)
				}
			}
		}
	}
}

// TestInt8KernelsWrapLikeGeneric checks that very long inputs, whose sums
// exceed int32, wrap exactly as the generic int32 loop does.
func TestInt8KernelsWrapLikeGeneric(t *testing.T) {
	if testing.Short() {
		t.Skip("long input; skipped in -short")
	}
	n := 1 << 18 // 2^18 * 2^14 = 2^32
	a, b := make([]int8, n), make([]int8, n)
	fill8(a, -128)
	fill8(b, -128)
	b[7] = 127
	for _, ks := range availableKernels() {
		if got, want := ks.dotInt8(a, b), dotInt8Generic(a, b); got != want {
			t.Errorf("%s dotInt8: got %d want %d", ks.name, got, want)
		}
		fill8(b, 127)
		if got, want := ks.l2SqInt8(a, b), l2SqInt8Generic(a, b); got != want {
			t.Errorf("%s l2SqInt8: got %d want %d", ks.name, got, want)
		}
		fill8(b, -128)
	}
}

func TestFloatKernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, ks := range availableKernels() {
		for _, n := range testLengths {
			bufA, bufB := make([]float32, n+21), make([]float32, n+21)
			a, b := bufA[1:1+n:1+n], bufB[3:3+n:3+n]
			var absDot, sumSq float64
			for i := range a {
				a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
				absDot += math.Abs(float64(a[i]) * float64(b[i]))
				d := float64(a[i]) - float64(b[i])
				sumSq += d * d
			}
			// Summation order differs between kernels; bound the error by
			// the magnitude of the terms, not of the (possibly tiny) sum.
			tol := 1e-5*absDot + 1e-6
			if got, want := ks.dotFloat32(a, b), dotFloat32Generic(a, b); math.Abs(float64(got-want)) > tol {
				t.Errorf("%s dotFloat32 n=%d: got %v want %v", ks.name, n, got, want)
			}
			if got, want := ks.l2SqFloat32(a, b), l2SqFloat32Generic(a, b); math.Abs(float64(got-want)) > 1e-5*sumSq+1e-6 {
				t.Errorf("%s l2SqFloat32 n=%d: got %v want %v", ks.name, n, got, want)
			}
		}
	}
}

// TestFloatKernelsExactOnIntegers uses small integers, for which every
// summation order is exact, so the SIMD kernels must agree bit for bit.
func TestFloatKernelsExactOnIntegers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, ks := range availableKernels() {
		for _, n := range testLengths {
			a, b := make([]float32, n), make([]float32, n)
			for i := range a {
				a[i], b[i] = float32(r.IntN(17)-8), float32(r.IntN(17)-8)
			}
			if got, want := ks.dotFloat32(a, b), dotFloat32Generic(a, b); got != want {
				t.Errorf("%s dotFloat32 n=%d: got %v want %v", ks.name, n, got, want)
			}
			if got, want := ks.l2SqFloat32(a, b), l2SqFloat32Generic(a, b); got != want {
				t.Errorf("%s l2SqFloat32 n=%d: got %v want %v", ks.name, n, got, want)
			}
		}
	}
}

func TestKernelsPanicOnLengthMismatch(t *testing.T) {
	calls := map[string]func(){
		"DotInt8":       func() { DotInt8(make([]int8, 4), make([]int8, 3)) },
		"L2SqInt8":      func() { L2SqInt8(make([]int8, 3), make([]int8, 4)) },
		"DotFloat32":    func() { DotFloat32(make([]float32, 4), make([]float32, 3)) },
		"L2SqFloat32":   func() { L2SqFloat32(make([]float32, 3), make([]float32, 2)) },
		"CodeDistance":  func() { CodeDistance(L2, make([]int8, 4), make([]int8, 5)) },
		"FloatDistance": func() { FloatDistance(Cosine, make([]float32, 4), make([]float32, 5)) },
	}
	for name, f := range calls {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic on length mismatch", name)
				}
			}()
			f()
		}()
	}
}

func TestDistances(t *testing.T) {
	a, b := []int8{1, 2, 3}, []int8{4, -5, 6}
	if got := CodeDistance(L2, a, b); got != 9+49+9 {
		t.Errorf("CodeDistance L2 = %d", got)
	}
	if got := CodeDistance(Dot, a, b); got != -(4 - 10 + 18) {
		t.Errorf("CodeDistance Dot = %d", got)
	}
	if got := CodeDistance(Cosine, a, b); got != -(4 - 10 + 18) {
		t.Errorf("CodeDistance Cosine = %d", got)
	}
	x, y := []float32{0.6, 0.8}, []float32{1, 0}
	if got := FloatDistance(Cosine, x, y); math.Abs(float64(got-0.4)) > 1e-6 {
		t.Errorf("FloatDistance Cosine = %v", got)
	}
	if got := FloatDistance(Dot, x, y); math.Abs(float64(got+0.6)) > 1e-6 {
		t.Errorf("FloatDistance Dot = %v", got)
	}
	if got := FloatDistance(L2, x, y); math.Abs(float64(got-0.8)) > 1e-6 {
		t.Errorf("FloatDistance L2 = %v", got)
	}
}

// TestPurego runs this package's tests again with the purego tag, so the
// build without assembly is checked in the same `go test` run.
func TestPurego(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilds the package; skipped in -short")
	}
	if selectedKernels() == genericKernels.name {
		t.Skip("already running the portable kernels")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	cmd := exec.Command(gobin, "test", "-count=1", "-short", "-tags", "purego", ".")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test -tags purego: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ok") {
		t.Fatalf("unexpected output:\n%s", out)
	}
}

func TestSelectedKernels(t *testing.T) {
	t.Logf("selected kernels: %s (available: %d)", selectedKernels(), len(availableKernels()))
}

// TestDispatch drives the exported kernels down every path the CPU allows
// by flipping the feature flags the dispatchers read.
func TestDispatch(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	a8, b8 := make([]int8, 100), make([]int8, 100)
	int8Patterns[0].fill(r, a8, b8)
	af, bf := make([]float32, 100), make([]float32, 100)
	for i := range af {
		af[i], bf[i] = float32(r.IntN(9)-4), float32(r.IntN(9)-4)
	}
	check := func(path string) {
		t.Helper()
		if got, want := DotInt8(a8, b8), dotInt8Generic(a8, b8); got != want {
			t.Errorf("%s: DotInt8 %d want %d", path, got, want)
		}
		if got, want := L2SqInt8(a8, b8), l2SqInt8Generic(a8, b8); got != want {
			t.Errorf("%s: L2SqInt8 %d want %d", path, got, want)
		}
		if got, want := DotFloat32(af, bf), dotFloat32Generic(af, bf); got != want {
			t.Errorf("%s: DotFloat32 %v want %v", path, got, want)
		}
		if got, want := L2SqFloat32(af, bf), l2SqFloat32Generic(af, bf); got != want {
			t.Errorf("%s: L2SqFloat32 %v want %v", path, got, want)
		}
	}
	check(selectedKernels())
	for _, path := range []struct {
		name         string
		avx512, avx2 bool
	}{{"generic", false, false}, {"avx2", false, true}} {
		restore := setFeatures(path.avx512, path.avx2)
		check(path.name)
		restore()
	}
}
