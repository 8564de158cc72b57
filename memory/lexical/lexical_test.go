package lexical

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func mustNew(t testing.TB, o Options) *Embedder {
	t.Helper()
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestEmbedBasics(t *testing.T) {
	e := mustNew(t, Options{})
	if e.Dim() != DefaultDim {
		t.Fatalf("Dim %d", e.Dim())
	}
	texts := []string{"I like green tea in the morning", "我喜欢早上喝绿茶", "", "the of and", "I like green tea in the morning"}
	vs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(texts) {
		t.Fatalf("%d vectors", len(vs))
	}
	for i, v := range vs {
		if len(v) != e.Dim() {
			t.Fatalf("vector %d has %d dims", i, len(v))
		}
		n := cosine(v, v)
		if texts[i] == "" {
			if n != 0 {
				t.Errorf("text %q: norm² %v, want zero vector", texts[i], n)
			}
		} else if math.Abs(n-1) > 1e-5 {
			t.Errorf("text %q: norm² %v, want 1", texts[i], n)
		}
	}
	if c := cosine(vs[0], vs[4]); math.Abs(c-1) > 1e-6 {
		t.Errorf("same text, cosine %v", c)
	}
	if e2, _ := e.Embed(context.Background(), nil); len(e2) != 0 {
		t.Errorf("nil input gave %d vectors", len(e2))
	}
}

// TestEmbedSimilarity: lexical overlap must show in cosine, in both scripts,
// and word forms / typos must still match through the character n-grams.
func TestEmbedSimilarity(t *testing.T) {
	e := mustNew(t, Options{})
	cases := []struct{ q, near, far string }{
		{"green tea preferences", "The user prefers green tea over coffee", "The meeting moved to Tuesday at noon"},
		{"用户喜欢喝什么茶", "用户喜欢喝绿茶，不喜欢咖啡", "会议改到星期二中午"},
		{"memorization", "memorize the list", "bake a cake"},       // stemmed words differ, n-grams overlap
		{"recieve the package", "receive package tomorrow", "tax"}, // typo
	}
	for _, c := range cases {
		vs, err := e.Embed(context.Background(), []string{c.q, c.near, c.far})
		if err != nil {
			t.Fatal(err)
		}
		near, far := cosine(vs[0], vs[1]), cosine(vs[0], vs[2])
		if !(near > far+0.1) {
			t.Errorf("%q: cosine to near %.3f, to far %.3f", c.q, near, far)
		}
	}
}

// TestEmbedStable pins the vector of a text so that an accidental change of
// the features (which would silently break stored collections) fails here;
// bump Version when changing them on purpose.
func TestEmbedStable(t *testing.T) {
	e := mustNew(t, Options{Dim: 64})
	vs, err := e.Embed(context.Background(), []string{"Engram remembers 记忆"})
	if err != nil {
		t.Fatal(err)
	}
	var nz []int
	for i, x := range vs[0] {
		if x != 0 {
			nz = append(nz, i)
		}
	}
	const wantFP = "lexical/v1/analyzer=1/dim=64/ngram=3-5/w=1/fnv1a-fmix-signed/tf=log/l2"
	if e.Fingerprint() != wantFP {
		t.Errorf("fingerprint %q, want %q", e.Fingerprint(), wantFP)
	}
	wantNZ := []int{1, 2, 4, 5, 6, 7, 8, 11, 17, 18, 20, 21, 28, 32, 34, 36, 40, 44, 45, 46, 48, 52, 55, 56, 57, 58, 60}
	if !slices.Equal(nz, wantNZ) {
		t.Errorf("non-zero dimensions %v, want %v", nz, wantNZ)
	}
	if got := vs[0][1]; math.Abs(float64(got)-(-0.029840777)) > 1e-6 {
		t.Errorf("component 1 = %v, want -0.029840777", got)
	}
}

func TestNewOptions(t *testing.T) {
	for _, d := range []int{-1, 1, MinDim - 1, MaxDim + 1} {
		if _, err := New(Options{Dim: d}); !errors.Is(err, ErrOptions) {
			t.Errorf("Dim %d: %v", d, err)
		}
	}
	a, b := mustNew(t, Options{Dim: 256}), mustNew(t, Options{Dim: 512})
	if a.Fingerprint() == b.Fingerprint() {
		t.Error("different dims share a fingerprint")
	}
	if mustNew(t, Options{}).Fingerprint() != mustNew(t, Options{Dim: DefaultDim}).Fingerprint() {
		t.Error("default and explicit default differ")
	}
}

func TestEmbedCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	vs, err := mustNew(t, Options{}).Embed(ctx, []string{"a"})
	if !errors.Is(err, context.Canceled) || vs != nil {
		t.Fatalf("%v %v", vs, err)
	}
}

func FuzzEmbed(f *testing.F) {
	e := mustNew(f, Options{Dim: 32})
	for _, s := range []string{"hello world", "记忆库", "\xff\xfe", strings.Repeat("a", 100), "ＡＢＣ e\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vs, err := e.Embed(context.Background(), []string{s})
		if err != nil {
			t.Fatal(err)
		}
		var n float64
		for _, x := range vs[0] {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("non-finite component for %q", s)
			}
			n += float64(x) * float64(x)
		}
		if n != 0 && math.Abs(n-1) > 1e-4 {
			t.Fatalf("norm² %v for %q", n, s)
		}
	})
}

func BenchmarkEmbed(b *testing.B) {
	e := mustNew(b, Options{})
	texts := []string{
		"The user prefers green tea over coffee and usually drinks it in the morning before work.",
		"用户喜欢喝绿茶，不喜欢咖啡，通常在上班前的早上喝。",
	}
	n := 0
	for _, t := range texts {
		n += len(t)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTokenlessTexts: texts the tokenizer finds nothing in get a unit vector
// of their characters (a cosine index refuses the zero vector), close to the
// same characters and far from others.
func TestTokenlessTexts(t *testing.T) {
	e := mustNew(t, Options{})
	long := strings.Repeat("x", 200<<10)
	texts := []string{"🎉", "+", "...", "the of and", long, "🎉🎉 🎉", "....", "   \t\n"}
	vs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs[:7] {
		if n := cosine(v, v); math.Abs(n-1) > 1e-5 {
			t.Errorf("%.12q: norm² %v, want 1", texts[i], n)
		}
	}
	if n := cosine(vs[7], vs[7]); n != 0 {
		t.Errorf("whitespace only: norm² %v, want the zero vector", n)
	}
	if same, other := cosine(vs[0], vs[5]), cosine(vs[0], vs[2]); same < 0.5 || same <= other {
		t.Errorf("cos(🎉, 🎉🎉 🎉) = %.3f, cos(🎉, ...) = %.3f", same, other)
	}
	if same, other := cosine(vs[2], vs[6]), cosine(vs[2], vs[1]); same < 0.5 || same <= other {
		t.Errorf("cos(..., ....) = %.3f, cos(..., +) = %.3f", same, other)
	}
	again, _ := e.Embed(context.Background(), []string{"🎉"})
	if cosine(again[0], vs[0]) < 1-1e-6 {
		t.Error("the fallback is not deterministic")
	}
}

// TestEmbedQuery: a query loses its question words (as in keyword search) unless nothing else
// is left; a memory keeps them.
func TestEmbedQuery(t *testing.T) {
	e, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct{ query, same string }{
		{"What did Alice drink?", "Alice drink"},
		{"who is he", "who is he"},
	} {
		q, err := e.EmbedQuery(ctx, c.query)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := e.Embed(ctx, []string{c.same})
		if !slices.Equal(q, want[0]) {
			t.Fatalf("EmbedQuery(%q) differs from Embed(%q)", c.query, c.same)
		}
	}
	q, _ := e.EmbedQuery(ctx, "What did Alice drink?")
	m, _ := e.Embed(ctx, []string{"What did Alice drink?"})
	if slices.Equal(q, m[0]) {
		t.Fatal("the memory embedding dropped question words too")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.EmbedQuery(cctx, "x"); err == nil {
		t.Fatal("cancelled context")
	}
}
