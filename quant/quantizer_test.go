package quant

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

func TestTrainErrors(t *testing.T) {
	good := []float32{1, 2, 3, 4}
	cases := []struct {
		name   string
		sample []float32
		dim    int
		m      Metric
		opts   TrainOptions
	}{
		{"zero dim", good, 0, L2, TrainOptions{}},
		{"bad metric", good, 2, Metric(9), TrainOptions{}},
		{"empty", nil, 2, L2, TrainOptions{}},
		{"ragged", good[:3], 2, L2, TrainOptions{}},
		{"NaN", []float32{1, float32(math.NaN())}, 2, L2, TrainOptions{}},
		{"Inf", []float32{1, float32(math.Inf(-1))}, 2, L2, TrainOptions{}},
		{"quantile > 1", good, 2, L2, TrainOptions{ClipQuantile: 1.5}},
		{"quantile < 0", good, 2, L2, TrainOptions{ClipQuantile: -0.1}},
		{"quantile NaN", good, 2, L2, TrainOptions{ClipQuantile: math.NaN()}},
	}
	for _, c := range cases {
		if q, err := Train(c.sample, c.dim, c.m, c.opts); err == nil {
			t.Errorf("%s: got %+v, want error", c.name, q)
		}
	}
}

func TestTrainScale(t *testing.T) {
	// 10000 values 1..10000: the 0.9999 quantile is 9999, the max 10000.
	sample := make([]float32, 10000)
	for i := range sample {
		sample[i] = float32(i + 1)
		if i%2 == 1 {
			sample[i] = -sample[i]
		}
	}
	q, err := Train(sample, 100, Dot, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := float32(9999.0 / 127); q.Scale != want {
		t.Errorf("default scale %v want %v", q.Scale, want)
	}
	q, _ = Train(sample, 100, Dot, TrainOptions{ClipQuantile: 1})
	if want := float32(10000.0 / 127); q.Scale != want {
		t.Errorf("q=1 scale %v want %v", q.Scale, want)
	}
	// An all-zero sample still yields a usable quantizer.
	q, err = Train(make([]float32, 8), 4, L2, TrainOptions{})
	if err != nil || !(q.Scale > 0) {
		t.Errorf("zero sample: %+v %v", q, err)
	}
}

func TestEncodeDecode(t *testing.T) {
	q := &Quantizer{Dim: 6, Metric: L2, Scale: 0.5}
	v := []float32{0, 0.26, -0.74, 63.5, 1000, -1000}
	c := make([]int8, 6)
	q.Encode(c, v)
	want := []int8{0, 1, -1, 127, 127, -127}
	if !bytes.Equal(i8b(c), i8b(want)) {
		t.Fatalf("codes %v want %v", c, want)
	}
	d := make([]float32, 6)
	q.Decode(d, c)
	for i := range 4 {
		if math.Abs(float64(d[i]-v[i])) > 0.25+1e-6 {
			t.Errorf("decode[%d] = %v, from %v", i, d[i], v[i])
		}
	}
}

func i8b(v []int8) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

// TestCodeDotProportional checks the property the global symmetric scale
// exists for: Scale² · codeA·codeB approximates a·b within the rounding
// error bound, for every metric's kernel.
func TestCodeDotProportional(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const dim = 256
	sample := make([]float32, 64*dim)
	for i := range sample {
		sample[i] = float32(r.NormFloat64())
	}
	q, err := Train(sample, dim, Dot, TrainOptions{ClipQuantile: 1})
	if err != nil {
		t.Fatal(err)
	}
	ca, cb := make([]int8, dim), make([]int8, dim)
	for i := 0; i < 63; i++ {
		a, b := sample[i*dim:(i+1)*dim], sample[(i+1)*dim:(i+2)*dim]
		q.Encode(ca, a)
		q.Encode(cb, b)
		approx := float64(DotInt8(ca, cb)) * float64(q.Scale) * float64(q.Scale)
		exact := float64(DotFloat32(a, b))
		// |error| <= sum |a||δb| + |b||δa| + |δa||δb| with |δ| <= Scale/2.
		var bound float64
		for j := range a {
			bound += (math.Abs(float64(a[j]))+math.Abs(float64(b[j])))*float64(q.Scale)/2 + float64(q.Scale*q.Scale)/4
		}
		if math.Abs(approx-exact) > bound {
			t.Fatalf("pair %d: code dot %v, float dot %v, bound %v", i, approx, exact, bound)
		}
		l2 := float64(L2SqInt8(ca, cb)) * float64(q.Scale) * float64(q.Scale)
		if ex := float64(L2SqFloat32(a, b)); math.Abs(l2-ex) > 2*bound+1e-9 {
			t.Fatalf("pair %d: code l2 %v, float l2 %v", i, l2, ex)
		}
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	q := &Quantizer{Dim: 1024, Metric: Cosine, Scale: 0.0123}
	b, err := q.MarshalBinary()
	if err != nil || len(b) != EncodedSize {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
	var got Quantizer
	if err := got.UnmarshalBinary(b); err != nil || got != *q {
		t.Fatalf("got %+v, %v", got, err)
	}
	bad := map[string]func([]byte){
		"short":     func(b []byte) {},
		"version":   func(b []byte) { b[0] = 2 },
		"metric":    func(b []byte) { b[1] = 0 },
		"dim 0":     func(b []byte) { b[4], b[5] = 0, 0 },
		"scale NaN": func(b []byte) { copy(b[8:], []byte{0, 0, 0xc0, 0x7f}) },
		"scale < 0": func(b []byte) { b[11] |= 0x80 },
	}
	for name, mutate := range bad {
		c := bytes.Clone(b)
		mutate(c)
		if name == "short" {
			c = c[:EncodedSize-1]
		}
		before := got
		if err := got.UnmarshalBinary(c); err == nil {
			t.Errorf("%s: no error", name)
		}
		if got != before {
			t.Errorf("%s: failed decode changed the receiver", name)
		}
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	good, _ := (&Quantizer{Dim: 128, Metric: L2, Scale: 0.5}).MarshalBinary()
	f.Add(good)
	f.Add([]byte{})
	f.Add(make([]byte, EncodedSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		var q Quantizer
		if err := q.UnmarshalBinary(b); err != nil {
			return
		}
		if q.Dim <= 0 || !q.Metric.Valid() || !(q.Scale > 0) || math.IsInf(float64(q.Scale), 0) {
			t.Fatalf("accepted invalid parameters %+v", q)
		}
		out, err := q.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var q2 Quantizer
		if err := q2.UnmarshalBinary(out); err != nil || q2 != q {
			t.Fatalf("re-decode %+v %v", q2, err)
		}
		// A decoded quantizer must be usable without panics.
		c := make([]int8, q.Dim)
		v := make([]float32, q.Dim)
		q.Encode(c, v)
		q.Decode(v, c)
	})
}

func TestMetric(t *testing.T) {
	for _, m := range []Metric{Cosine, Dot, L2} {
		p, err := ParseMetric(m.String())
		if err != nil || p != m || !m.Valid() {
			t.Errorf("%v: %v %v", m, p, err)
		}
	}
	if _, err := ParseMetric("hamming"); err == nil {
		t.Error("unknown metric parsed")
	}
	if Metric(0).Valid() || Metric(4).Valid() || Metric(7).String() != "Metric(7)" {
		t.Error("invalid metric accepted")
	}
}
