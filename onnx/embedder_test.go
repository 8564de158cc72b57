package onnx

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/engramdb/engram/onnx/tokenizer"
)

// byteTokenizer is an XLM-R-laid-out tokenizer over bytes (<s>=0, <pad>=1,
// </s>=2, byte b = b+4), so the embedder's mechanics are tested apart from
// the real tokenizer; every id fits the tiny models' vocabulary.
type byteTokenizer struct{ maxLen int }

func (byteTokenizer) PadID() int32 { return 1 }

func (b byteTokenizer) Encode(text string) ([]int32, bool, error) {
	maxLen := b.maxLen
	ids := []int32{0}
	for i := 0; i < len(text); i++ {
		ids = append(ids, int32(text[i])+4)
	}
	ids = append(ids, 2)
	if len(ids) <= maxLen {
		return ids, false, nil
	}
	return append(ids[:maxLen-1], 2), true, nil
}

// repoRoot walks up from the test's directory to the module root.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// needRuntime skips the test when libonnxruntime is not installed, except
// under CI=true: CI runs scripts/setup.sh and must exercise the real path.
func needRuntime(t testing.TB) {
	t.Helper()
	if _, err := RuntimeLibraryPath(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but ONNX Runtime is missing: %v", err)
		}
		t.Skipf("ONNX Runtime not installed (run scripts/setup.sh): %v", err)
	}
}

func tinyModel(t testing.TB, name string) string {
	return filepath.Join(repoRoot(t), "testdata", "model", name, "model.onnx")
}

// openTiny opens a tiny test model with the byte tokenizer unless opts says otherwise.
func openTiny(t testing.TB, name string, opts Options) *Embedder {
	t.Helper()
	needRuntime(t)
	if opts.ModelPath == "" {
		opts.ModelPath = tinyModel(t, name)
	}
	if opts.MaxTokens == 0 {
		opts.MaxTokens = 128 // the tiny model's position table
	}
	if opts.Tokenizer == nil && opts.TokenizerPath == "" {
		opts.Tokenizer = byteTokenizer{opts.MaxTokens}
	}
	if opts.IntraOpThreads == 0 {
		opts.IntraOpThreads = 1 // the test machine is shared
	}
	e, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

var sample = []string{
	"The quick brown fox jumps over the lazy dog.",
	"a",
	"",
	"Local-first memory: chunk, embed, index, recall, forget.",
	"日本語のテキストも埋め込めます。",
	"café and cafe\u0301",
	strings.Repeat("long text ", 10),
}

func maxAbsDiff(a, b []float32) float64 {
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

func TestEmbedPaddingInvariance(t *testing.T) {
	for _, model := range []string{"tiny", "tiny-dense"} {
		t.Run(model, func(t *testing.T) {
			e := openTiny(t, model, Options{})
			batch, err := e.Embed(context.Background(), sample)
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range sample {
				alone, err := e.Embed(context.Background(), []string{text})
				if err != nil {
					t.Fatal(err)
				}
				if len(alone[0]) != e.Dim() || len(batch[i]) != e.Dim() {
					t.Fatalf("text %d: dims %d, %d, want %d", i, len(alone[0]), len(batch[i]), e.Dim())
				}
				if d := maxAbsDiff(alone[0], batch[i]); d > 1e-5 {
					t.Errorf("text %d: alone vs padded batch differ by %g", i, d)
				}
				var norm float64
				for _, x := range alone[0] {
					norm += float64(x) * float64(x)
				}
				if math.Abs(norm-1) > 1e-4 {
					t.Errorf("text %d: squared norm %g, want 1", i, norm)
				}
			}
		})
	}
}

func TestEmbedDeterministicAndOrdered(t *testing.T) {
	e := openTiny(t, "tiny", Options{MaxBatch: 3, BatchTokens: 64})
	first, err := e.Embed(context.Background(), sample)
	if err != nil {
		t.Fatal(err)
	}
	// Reversed input: same vectors, reversed.
	rev := make([]string, len(sample))
	for i := range sample {
		rev[len(sample)-1-i] = sample[i]
	}
	second, err := e.Embed(context.Background(), rev)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sample {
		if d := maxAbsDiff(first[i], second[len(sample)-1-i]); d > 1e-5 {
			t.Errorf("text %d: order changed its vector by %g", i, d)
		}
	}
	// Distinct texts give distinct vectors: results are not shuffled copies.
	for i := range first {
		for j := i + 1; j < len(first); j++ {
			if maxAbsDiff(first[i], first[j]) < 1e-3 {
				t.Errorf("texts %d and %d have (nearly) the same vector", i, j)
			}
		}
	}
	// A second embedder on the same files: same fingerprint, same vectors.
	e2 := openTiny(t, "tiny", Options{})
	if e.Fingerprint() != e2.Fingerprint() {
		t.Errorf("fingerprints differ: %s vs %s", e.Fingerprint(), e2.Fingerprint())
	}
	again, err := e2.Embed(context.Background(), sample)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sample {
		if d := maxAbsDiff(first[i], again[i]); d > 1e-5 {
			t.Errorf("text %d: second embedder differs by %g", i, d)
		}
	}
	st := e.Stats()
	if st.Texts != int64(2*len(sample)) || st.Batches < 2*3 || st.Tokens == 0 || st.PaddedTokens < st.Tokens || st.Run <= 0 {
		t.Errorf("stats do not add up: %+v", st)
	}
}

func TestEmbedConcurrent(t *testing.T) {
	e := openTiny(t, "tiny", Options{MaxBatch: 2})
	want, err := e.Embed(context.Background(), sample)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			i := g % len(sample)
			got, err := e.Embed(context.Background(), sample[i:])
			if err != nil {
				errs <- err
				return
			}
			for k := range got {
				if d := maxAbsDiff(got[k], want[i+k]); d > 1e-5 {
					errs <- errors.New("concurrent result differs")
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestEmbedCancel(t *testing.T) {
	e := openTiny(t, "tiny", Options{MaxBatch: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, sample); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: got %v, want context.Canceled", err)
	}
	// Cancel while running: many one-text batches, cancelled soon after start.
	texts := make([]string, 5000)
	for i := range texts {
		texts[i] = strings.Repeat("x", i%100)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := e.Embed(ctx, texts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel during run: got %v, want context.Canceled", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("cancellation took %v", el)
	}
	// The embedder still works afterwards.
	if _, err := e.Embed(context.Background(), sample[:1]); err != nil {
		t.Fatalf("after cancel: %v", err)
	}
}

func TestEmbedEdgeInputs(t *testing.T) {
	e := openTiny(t, "tiny", Options{MaxTokens: 16})
	out, err := e.Embed(context.Background(), nil)
	if err != nil || out == nil || len(out) != 0 {
		t.Errorf("empty batch: got %v, %v; want empty slice, nil", out, err)
	}
	res, err := e.EmbedDetailed(context.Background(), []string{"", "short", strings.Repeat("long ", 100)})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Tokens != 2 || res[0].Truncated || len(res[0].Vector) != e.Dim() {
		t.Errorf("empty string: %+v", res[0])
	}
	if res[1].Truncated {
		t.Errorf("short text reported truncated")
	}
	if !res[2].Truncated || res[2].Tokens != 16 {
		t.Errorf("long text: tokens %d truncated %v, want 16 true", res[2].Tokens, res[2].Truncated)
	}
	if _, err := e.Embed(context.Background(), []string{"ok", "bad \xff utf8"}); err == nil || !strings.Contains(err.Error(), "text 1") {
		t.Errorf("invalid UTF-8: got %v, want an error naming text 1", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: got %v, want ErrClosed", err)
	}
}

// copyModel copies a tiny model into a temporary directory the test may damage.
func copyModel(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Dir(tinyModel(t, name))
	dst := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"model.onnx", "model.onnx_data"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dst, "model.onnx")
}

func TestFingerprintChanges(t *testing.T) {
	model := copyModel(t, "tiny")
	tokPath := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(tokPath, []byte(`{"version":"1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fp := func(opts Options) string {
		opts.ModelPath = model
		opts.TokenizerPath = tokPath // hashed; the byte tokenizer encodes
		opts.MaxTokens = cmp.Or(opts.MaxTokens, 128)
		opts.Tokenizer = byteTokenizer{opts.MaxTokens}
		e := openTiny(t, "", opts)
		defer e.Close()
		return e.Fingerprint()
	}
	base := fp(Options{})
	if !strings.Contains(base, "pool=cls") || !strings.Contains(base, "out=last_hidden_state") {
		t.Errorf("fingerprint %q does not record output and pooling", base)
	}
	seen := map[string]string{base: "base"}
	check := func(what, got string) {
		t.Helper()
		if prev, dup := seen[got]; dup {
			t.Errorf("%s: fingerprint equals that of %s", what, prev)
		}
		seen[got] = what
	}
	check("max tokens", fp(Options{MaxTokens: 64}))

	data := filepath.Join(filepath.Dir(model), "model.onnx_data")
	b, _ := os.ReadFile(data)
	b[len(b)-1] ^= 0x40 // a weight changes; the model still loads
	os.WriteFile(data, b, 0o600)
	check("external data", fp(Options{}))

	os.WriteFile(tokPath, []byte(`{"version":"2"}`), 0o600)
	check("tokenizer", fp(Options{}))

	dense := openTiny(t, "tiny-dense", Options{})
	if !strings.Contains(dense.Fingerprint(), "pool=none") || !strings.Contains(dense.Fingerprint(), "out=sentence_embedding") {
		t.Errorf("dense model fingerprint %q", dense.Fingerprint())
	}
}

func TestOpenBadModel(t *testing.T) {
	needRuntime(t)
	good := copyModel(t, "tiny")
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	onnxBytes, _ := os.ReadFile(good)
	noData := filepath.Join(t.TempDir(), "model.onnx")
	os.WriteFile(noData, onnxBytes, 0o600) // its model.onnx_data is missing
	shortData := copyModel(t, "tiny")
	os.Truncate(filepath.Join(filepath.Dir(shortData), "model.onnx_data"), 1000)

	cases := map[string]Options{
		"no model path":      {Tokenizer: byteTokenizer{128}},
		"no tokenizer":       {ModelPath: good},
		"missing model":      {ModelPath: filepath.Join(dir, "nope.onnx"), Tokenizer: byteTokenizer{128}},
		"directory":          {ModelPath: dir, Tokenizer: byteTokenizer{128}},
		"garbage model":      {ModelPath: write("garbage.onnx", []byte("this is not a protobuf \x00\x01\x02")), Tokenizer: byteTokenizer{128}},
		"empty model":        {ModelPath: write("empty.onnx", nil), Tokenizer: byteTokenizer{128}},
		"truncated model":    {ModelPath: write("trunc.onnx", onnxBytes[:len(onnxBytes)/2]), Tokenizer: byteTokenizer{128}},
		"missing data":       {ModelPath: noData, Tokenizer: byteTokenizer{128}},
		"short data":         {ModelPath: shortData, Tokenizer: byteTokenizer{128}},
		"missing tokenizer":  {ModelPath: good, TokenizerPath: filepath.Join(dir, "tokenizer.json")},
		"bad output":         {ModelPath: good, Tokenizer: byteTokenizer{128}, Output: "pooler_output"},
		"negative option":    {ModelPath: good, Tokenizer: byteTokenizer{128}, MaxBatch: -1},
		"max tokens too low": {ModelPath: good, Tokenizer: byteTokenizer{128}, MaxTokens: 1},
		"padding below 1":    {ModelPath: good, Tokenizer: byteTokenizer{128}, MaxPadding: 0.5},
		"unknown device":     {ModelPath: good, Tokenizer: byteTokenizer{128}, Device: "tpu"},
		"missing library":    {ModelPath: good, Tokenizer: byteTokenizer{128}, LibraryPath: filepath.Join(dir, "libonnxruntime.so")},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			if name == "missing library" {
				t.Setenv(EnvRuntimeLib, "")
				t.Setenv(EnvCache, dir)
			}
			e, err := Open(opts)
			if err == nil {
				e.Close()
				t.Fatal("Open succeeded")
			}
			t.Log(err)
		})
	}
}

func TestGPUUnavailable(t *testing.T) {
	needRuntime(t)
	for _, dev := range []Device{DeviceCUDA, DeviceTensorRT} {
		_, err := Open(Options{ModelPath: tinyModel(t, "tiny"), Tokenizer: byteTokenizer{128}, MaxTokens: 128, Device: dev})
		if err == nil {
			t.Skipf("%s is available here; the fallback path cannot be tested", dev)
		}
		t.Logf("%s: %v", dev, err)
		if !strings.Contains(err.Error(), "CPUFallback") {
			t.Errorf("%s: error %q does not say how to fall back", dev, err)
		}
		e := openTiny(t, "tiny", Options{Device: dev, CPUFallback: true})
		if !strings.HasPrefix(e.Provider(), "cpu (fallback") {
			t.Errorf("%s with fallback: provider %q", dev, e.Provider())
		}
		if _, err := e.Embed(context.Background(), sample); err != nil {
			t.Errorf("%s fallback embed: %v", dev, err)
		}
	}
}

func TestRuntimeLibraryPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvCache, dir)
	t.Setenv(EnvRuntimeLib, "")
	_, err := RuntimeLibraryPath(filepath.Join(dir, "missing.so"))
	if !errors.Is(err, ErrRuntimeNotFound) || !strings.Contains(err.Error(), "scripts/setup.sh") {
		t.Fatalf("got %v, want ErrRuntimeNotFound telling to run scripts/setup.sh", err)
	}
	cached := filepath.Join(dir, "onnxruntime", RuntimeVersion, "libonnxruntime.so")
	os.MkdirAll(filepath.Dir(cached), 0o700)
	os.WriteFile(cached, nil, 0o600)
	if p, err := RuntimeLibraryPath(""); err != nil || p != cached {
		t.Errorf("cache: got %q, %v; want %q", p, err, cached)
	}
	env := filepath.Join(dir, "env.so")
	os.WriteFile(env, nil, 0o600)
	t.Setenv(EnvRuntimeLib, env)
	if p, err := RuntimeLibraryPath(""); err != nil || p != env {
		t.Errorf("env: got %q, %v; want %q", p, err, env)
	}
	if p, err := RuntimeLibraryPath(cached); err != nil || p != cached {
		t.Errorf("option: got %q, %v; want %q", p, err, cached)
	}
}

func TestPlanBatches(t *testing.T) {
	lens := []int{5, 300, 2, 2, 40, 1000, 7, 7, 7, 120}
	const budget, maxBatch = 1024, 3
	batches := planBatches(lens, budget, maxBatch, 0)
	seen := make([]bool, len(lens))
	prevMax := 0
	for _, b := range batches {
		long := 0
		for _, i := range b {
			if seen[i] {
				t.Fatalf("index %d in two batches", i)
			}
			seen[i] = true
			long = max(long, lens[i])
		}
		if n := len(b); n > 1 && (n > maxBatch || n*long > budget || n*long*long > budget*attnRefLen) {
			t.Errorf("batch %v exceeds the budgets", b)
		}
		if lens[b[0]] < prevMax {
			t.Errorf("batch %v is out of length order", b)
		}
		prevMax = long
	}
	for i, s := range seen {
		if !s {
			t.Fatalf("index %d in no batch", i)
		}
	}
	if len(planBatches(nil, budget, maxBatch, 1.1)) != 0 {
		t.Error("no lengths should give no batches")
	}
}

// tinyVocab is the vocabulary size testdata/model/tiny* were exported with.
const tinyVocab = 3002

// TestEmbedTokenizerJSON runs the whole path: tokenizer.json through
// onnx/tokenizer, then the tiny model whose vocabulary matches it.
func TestEmbedTokenizerJSON(t *testing.T) {
	tok := filepath.Join(repoRoot(t), "testdata", "tokenizer", "tiny", "tokenizer.json")
	if tk, err := tokenizer.Load(tok); err != nil {
		t.Fatal(err)
	} else if tk.VocabSize() != tinyVocab || tk.PadID() != 1 {
		t.Fatalf("tiny tokenizer has %d ids and pad %d; the tiny models were made for %d and 1: "+
			"re-export them with scripts/onnx/export_tiny.py (testdata/model/README.md)", tk.VocabSize(), tk.PadID(), tinyVocab)
	}
	e := openTiny(t, "tiny", Options{TokenizerPath: tok, MaxTokens: 32, MaxBatch: 4})
	texts := append(slices.Clone(sample), strings.Repeat("memory recall ", 200), "多言語のテキスト 🙂 and English")
	res, err := e.EmbedDetailed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		alone, err := e.EmbedDetailed(context.Background(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(alone[0].Vector, res[i].Vector); d > 1e-5 {
			t.Errorf("text %d: alone vs batch differ by %g", i, d)
		}
		if alone[0].Tokens != res[i].Tokens || alone[0].Tokens > 32 {
			t.Errorf("text %d: %d tokens alone, %d in batch", i, alone[0].Tokens, res[i].Tokens)
		}
	}
	if res[2].Tokens != 2 || res[2].Truncated {
		t.Errorf("empty string: %+v", res[2])
	}
	long := res[len(sample)]
	if !long.Truncated || long.Tokens != 32 {
		t.Errorf("long text: %d tokens, truncated %v; want 32, true", long.Tokens, long.Truncated)
	}
	if _, err := e.Embed(context.Background(), []string{"\xed\xa0\x80"}); err == nil {
		t.Error("surrogate half (invalid UTF-8) accepted")
	}
	bad := filepath.Join(t.TempDir(), "tokenizer.json")
	os.WriteFile(bad, []byte(`{"model":{"type":"BPE"}}`), 0o600)
	if _, err := Open(Options{ModelPath: tinyModel(t, "tiny"), TokenizerPath: bad, MaxTokens: 32}); err == nil {
		t.Error("unsupported tokenizer kind accepted")
	} else {
		t.Log(err)
	}
}

// FuzzEmbedText: any text gives a unit vector of Dim (or, for invalid UTF-8,
// an error), through the real tokenizer and model, and never panics.
func FuzzEmbedText(f *testing.F) {
	for _, s := range sample {
		f.Add(s)
	}
	f.Add("\xff\xfe")
	f.Add("<s></s><pad><mask>")
	f.Add(strings.Repeat("\u0301", 300))
	tok := filepath.Join(repoRoot(f), "testdata", "tokenizer", "tiny", "tokenizer.json")
	e := openTiny(f, "tiny", Options{TokenizerPath: tok, MaxTokens: 64})
	f.Fuzz(func(t *testing.T, s string) {
		res, err := e.EmbedDetailed(context.Background(), []string{s})
		if !utf8.ValidString(s) {
			if err == nil {
				t.Fatal("invalid UTF-8 accepted")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		v := res[0].Vector
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if len(v) != e.Dim() || math.Abs(n-1) > 1e-4 || res[0].Tokens > 64 {
			t.Fatalf("%q: dim %d norm² %g tokens %d", s, len(v), n, res[0].Tokens)
		}
	})
}

// TestEmbedAcrossWindows embeds more texts than one sort window holds and
// checks results land at their own index on both sides of the boundary.
func TestEmbedAcrossWindows(t *testing.T) {
	e := openTiny(t, "tiny", Options{MaxBatch: 64})
	texts := make([]string, sortWindow+5)
	for i := range texts {
		texts[i] = strings.Repeat(string(rune('a'+i%26)), 1+i%17) + fmt.Sprint(i)
	}
	all, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 17, sortWindow - 1, sortWindow, len(texts) - 1} {
		one, err := e.Embed(context.Background(), texts[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(one[0], all[i]); d > 1e-5 {
			t.Errorf("text %d: differs by %g from its batch result", i, d)
		}
	}
	if _, err := e.Embed(context.Background(), append(texts, "\xff")); err == nil || !strings.Contains(err.Error(), fmt.Sprint("text ", len(texts))) {
		t.Errorf("invalid text past the first window: %v", err)
	}
}

// badIDTokenizer returns an id outside the model's vocabulary.
type badIDTokenizer struct{}

func (badIDTokenizer) PadID() int32 { return 1 }
func (badIDTokenizer) Encode(text string) ([]int32, bool, error) {
	if text == "" {
		return []int32{0, 2}, false, nil
	}
	return []int32{0, 999_999, 2}, false, nil
}

func TestEmbedIDOutOfVocabulary(t *testing.T) {
	e := openTiny(t, "tiny", Options{Tokenizer: badIDTokenizer{}})
	if _, err := e.Embed(context.Background(), []string{"x"}); err == nil {
		t.Fatal("an id outside the vocabulary was accepted")
	} else {
		t.Log(err)
	}
	if _, err := e.Embed(context.Background(), []string{""}); err != nil {
		t.Fatalf("the embedder is unusable after a failed run: %v", err)
	}
}

// TestPlanBatchesPadding: with a padding bound no batch pads past it (a text that would make
// it pad more starts a new batch), and 0 leaves the token budgets alone in charge.
func TestPlanBatchesPadding(t *testing.T) {
	lens := []int{72, 60, 95, 61, 88, 64, 70, 79, 110, 66, 74, 81}
	if got := planBatches(lens, 8192, 32, 0); len(got) != 1 {
		t.Fatalf("unbounded padding: %d batches, want 1", len(got))
	}
	batches := planBatches(lens, 8192, 32, 1.1)
	if len(batches) < 2 {
		t.Fatalf("padding bound 1.1: %d batches, want several", len(batches))
	}
	n := 0
	for _, b := range batches {
		long, real := 0, 0
		for _, i := range b {
			long, real = max(long, lens[i]), real+lens[i]
		}
		n += len(b)
		if pad := float64(len(b)*long) / float64(real); pad > 1.1 {
			t.Errorf("batch %v pads %.3f tokens per real token, bound 1.1", b, pad)
		}
	}
	if n != len(lens) {
		t.Fatalf("%d texts batched, want %d", n, len(lens))
	}
}
