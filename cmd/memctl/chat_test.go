package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeOllama speaks enough of Ollama's /api/chat to test memctl chat: it
// records every request's messages and streams a canned answer.
type fakeOllama struct {
	mu       sync.Mutex
	requests [][]map[string]string
}

func (f *fakeOllama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/chat" {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Messages []map[string]string `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad json"}`, 400)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req.Messages)
	n := len(f.requests)
	f.mu.Unlock()
	for _, piece := range []string{"Answer ", fmt.Sprint(n), "."} {
		fmt.Fprintf(w, `{"message":{"role":"assistant","content":%q},"done":false}`+"\n", piece)
	}
	fmt.Fprint(w, `{"done":true}`+"\n")
}

func TestChat(t *testing.T) {
	isolate(t)
	fake := &fakeOllama{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "remember", "--session", "alice", "Alice is allergic to peanuts.")

	out := mustRun(t, dir, "I am planning a dinner party in Lisbon.\n\nWhat should I avoid cooking, given my peanut allergy?\n",
		"chat", "--session", "alice", "--ollama-url", srv.URL)
	if out != "Answer 1.\nAnswer 2.\n" {
		t.Fatalf("streamed answers = %q", out)
	}
	if len(fake.requests) != 2 {
		t.Fatalf("%d chat requests for 2 non-empty lines", len(fake.requests))
	}
	second := fake.requests[1]
	system, last := second[0], second[len(second)-1]
	// The recalled memory went into the prompt, between the delimiters ...
	if system["role"] != "system" || !strings.Contains(system["content"], "<memories>") || !strings.Contains(system["content"], "allergic to peanuts") {
		t.Fatalf("system message lacks the recalled memory: %q", system["content"])
	}
	// ... the first turn is in the conversation ...
	if len(second) != 4 || second[1]["content"] != "I am planning a dinner party in Lisbon." || second[2]["content"] != "Answer 1." {
		t.Fatalf("conversation = %v", second)
	}
	if last["role"] != "user" || !strings.Contains(last["content"], "peanut allergy") {
		t.Fatalf("last message = %v", last)
	}
	// ... and the turns were remembered in the session.
	if out := mustRun(t, dir, "", "recall", "--session", "alice", "dinner party Lisbon"); !strings.Contains(out, "Lisbon") {
		t.Fatalf("the chat turn was not remembered:\n%s", out)
	}
	if out := mustRun(t, dir, "", "recall", "--session", "bob", "Lisbon"); !strings.Contains(out, "(no memories") {
		t.Fatalf("the chat leaked into another session:\n%s", out)
	}
}

func TestChatWithoutOllama(t *testing.T) {
	isolate(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	_, errOut, code := memctl(t, filepath.Join(t.TempDir(), "s"), "hello\n", "chat", "--ollama-url", url)
	if code != exitFailed || !strings.Contains(errOut, "ollama serve") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// chat on a served store runs through the server's API: the same prompts
// reach the model and the turns are remembered, with their context, in the
// served store.
func TestChatThroughServer(t *testing.T) {
	isolate(t)
	fake := &fakeOllama{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "remember", "--session", "alice", "Alice is allergic to peanuts.")
	startServe(t, dir)

	out, errOut, code := memctl(t, dir, "I am planning a dinner party in Lisbon.\nWhat should I avoid cooking, given my peanut allergy?\n",
		"chat", "--session", "alice", "--ollama-url", srv.URL)
	if code != exitOK || out != "Answer 1.\nAnswer 2.\n" {
		t.Fatalf("chat through the server: exit %d, %q, %s", code, out, errOut)
	}
	second := fake.requests[1]
	if !strings.Contains(second[0]["content"], "allergic to peanuts") || len(second) != 4 || second[2]["content"] != "Answer 1." {
		t.Fatalf("second prompt: %v", second)
	}
	if out := mustRun(t, dir, "", "context", "--session", "alice"); !strings.Contains(out, "user: What should I avoid cooking") || !strings.Contains(out, "assistant: Answer 2.") {
		t.Fatalf("the served store's conversation:\n%s", out)
	}
	if out := mustRun(t, dir, "", "list", "--session", "alice", "--json"); !strings.Contains(out, `"context": "`) || !strings.Contains(out, "dinner party in Lisbon") {
		t.Fatalf("the chat turns were not remembered with their context:\n%s", out)
	}
}
