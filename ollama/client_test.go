package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func newTestClient(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := New(Config{BaseURL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEmbed(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/embed" || r.Method != http.MethodPost {
			http.Error(w, "wrong route", http.StatusNotFound)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "bge-m3" {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		out := make([][]float32, len(req.Input))
		for i, s := range req.Input {
			out[i] = []float32{float32(len(s)), float32(i)}
		}
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": out})
	})
	got, err := c.Embed(context.Background(), "bge-m3", []string{"a", "bcd"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0][0] != 1 || got[1][0] != 3 || got[1][1] != 1 {
		t.Fatalf("embeddings = %v", got)
	}
	if _, err := c.Embed(context.Background(), "", []string{"x"}); err == nil {
		t.Fatal("empty model name accepted")
	}
}

func TestEmbedCountMismatch(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"embeddings":[[1,2]]}`)
	})
	if _, err := c.Embed(context.Background(), "m", []string{"a", "b"}); err == nil {
		t.Fatal("mismatched embedding count accepted")
	}
}

func TestAPIError(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"model \"nope\" not found, try pulling it first"}`)
	})
	_, err := c.Embed(context.Background(), "nope", []string{"a"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || !strings.Contains(apiErr.Message, "not found") {
		t.Fatalf("err = %v", err)
	}
}

func TestChatStreams(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string    `json:"model"`
			Messages []Message `json:"messages"`
			Stream   bool      `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if !req.Stream || len(req.Messages) != 2 || req.Model != DefaultChatModel {
			http.Error(w, `{"error":"unexpected request"}`, http.StatusBadRequest)
			return
		}
		for _, piece := range []string{"Hel", "lo", "!"} {
			fmt.Fprintf(w, `{"message":{"role":"assistant","content":%q},"done":false}`+"\n", piece)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, `{"message":{"role":"assistant","content":""},"done":true,"prompt_eval_count":12,"eval_count":3}`+"\n")
	})
	var pieces []string
	resp, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{"system", "be brief"}, {"user", "hi"}}},
		func(s string) error { pieces = append(pieces, s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "Hello!" || len(pieces) != 3 || resp.PromptTokens != 12 || resp.AnswerTokens != 3 {
		t.Fatalf("resp = %+v, pieces = %q", resp, pieces)
	}
}

func TestChatStreamErrorAndTruncation(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"message":{"role":"assistant","content":"x"},"done":false}`+"\n")
	})
	if _, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{"user", "hi"}}}, nil); err == nil {
		t.Fatal("a stream without done was accepted")
	}
	c2 := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"error":"out of memory"}`+"\n")
	})
	if _, err := c2.Chat(context.Background(), ChatRequest{Messages: []Message{{"user", "hi"}}}, nil); err == nil || !strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("err = %v", err)
	}
	if _, err := c2.Chat(context.Background(), ChatRequest{}, nil); err == nil {
		t.Fatal("empty chat accepted")
	}
}

func TestNotRunning(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	c, err := New(Config{BaseURL: "http://" + addr, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Embed(context.Background(), "m", []string{"a"})
	if !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "ollama serve") {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) < 250*time.Millisecond { // 100 + 200 ms of backoff
		t.Fatalf("gave up after %v without retrying", time.Since(start))
	}
}

func TestHeaderTimeoutAndCancel(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	defer close(block) // runs first: releases handlers so Close does not wait
	c, _ := New(Config{BaseURL: srv.URL, Timeout: 100 * time.Millisecond})
	if _, err := c.Embed(context.Background(), "m", []string{"a"}); err == nil || !strings.Contains(err.Error(), "no response") {
		t.Fatalf("err = %v", err)
	}
	c2, _ := New(Config{BaseURL: srv.URL, Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c2.Embed(ctx, "m", []string{"a"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"ftp://x", "http://", "::"} {
		if _, err := New(Config{BaseURL: u}); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	c, err := New(Config{BaseURL: "localhost:11434"})
	if err != nil || c.BaseURL() != "http://localhost:11434" {
		t.Fatalf("c = %v, err = %v", c, err)
	}
}
