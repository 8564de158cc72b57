package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/engramdb/engram/memory"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeOllama speaks /api/embed: a deterministic 8-d vector per input, or
// what the test makes it say.
type fakeOllama struct {
	mu       sync.Mutex
	requests [][]string
	dim      func(req int) int // dimension per request number; default 8
	status   int
}

func (f *fakeOllama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/embed" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, req.Input)
	f.mu.Unlock()
	if f.status != 0 {
		w.WriteHeader(f.status)
		json.NewEncoder(w).Encode(map[string]string{"error": `model "` + req.Model + `" not found, try pulling it first`})
		return
	}
	dim := 8
	if f.dim != nil {
		dim = f.dim(n)
	}
	var out struct {
		Embeddings [][]float32 `json:"embeddings"`
	}
	for _, s := range req.Input {
		h := fnv.New64a()
		h.Write([]byte(s))
		seed := h.Sum64()
		v := make([]float32, dim)
		for i := range v {
			seed = seed*6364136223846793005 + 1442695040888963407
			v[i] = float32(int64(seed>>33)%1000) / 1000
		}
		out.Embeddings = append(out.Embeddings, v)
	}
	json.NewEncoder(w).Encode(out)
}

func newFakeOllama(t *testing.T, f *fakeOllama) *Client {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := New(Config{BaseURL: srv.URL, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEmbedder(t *testing.T) {
	f := &fakeOllama{}
	e, err := NewEmbedder(context.Background(), newFakeOllama(t, f), EmbedderOptions{Model: "bge-m3", MaxBatch: 3})
	if err != nil {
		t.Fatal(err)
	}
	if e.Dim() != 8 || e.Fingerprint() != "ollama:bge-m3:dim=8" {
		t.Errorf("dim %d fingerprint %q", e.Dim(), e.Fingerprint())
	}
	got, err := e.Embed(context.Background(), sample)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(sample) {
		t.Fatalf("%d vectors for %d texts", len(got), len(sample))
	}
	for i, s := range sample {
		one, err := e.Embed(context.Background(), []string{s})
		if err != nil {
			t.Fatal(err)
		}
		if maxAbsDiff(one[0], got[i]) != 0 {
			t.Errorf("text %d: batched vector is not the text's own", i)
		}
	}
	for _, req := range f.requests {
		if len(req) > 3 {
			t.Errorf("request with %d inputs, MaxBatch 3", len(req))
		}
	}
	if out, err := e.Embed(context.Background(), nil); err != nil || len(out) != 0 {
		t.Errorf("empty batch: %v, %v", out, err)
	}
	if _, err := e.Embed(context.Background(), []string{"\xc3"}); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, sample); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
}

func TestOllamaErrors(t *testing.T) {
	missing := &fakeOllama{status: http.StatusNotFound}
	_, err := NewEmbedder(context.Background(), newFakeOllama(t, missing), EmbedderOptions{Model: "nope"})
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing model: %v", err)
	}
	// A server whose dimension changes between requests is caught.
	shifty := &fakeOllama{dim: func(n int) int { return 8 + n }}
	e, err := NewEmbedder(context.Background(), newFakeOllama(t, shifty), EmbedderOptions{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), []string{"x"}); err == nil || !strings.Contains(err.Error(), "dimensional") {
		t.Errorf("dimension change: %v", err)
	}
	down, _ := New(Config{BaseURL: "http://127.0.0.1:1", Retries: -1})
	if _, err := NewEmbedder(context.Background(), down, EmbedderOptions{Model: "m"}); err == nil {
		t.Error("no server: no error")
	} else {
		t.Log(err)
	}
	for name, opts := range map[string]EmbedderOptions{"no model": {}, "negative batch": {Model: "m", MaxBatch: -1}} {
		if _, err := NewEmbedder(context.Background(), down, opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewEmbedder(context.Background(), nil, EmbedderOptions{Model: "m"}); err == nil {
		t.Error("nil client: no error")
	}
}

// The embedder plugs into the memory layer.
var _ memory.Embedder = (*Embedder)(nil)

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
