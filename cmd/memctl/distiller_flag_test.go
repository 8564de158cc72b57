package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestDistillerFlag: --distiller ollama:MODEL makes context distill ask that model (a local
// server speaking Ollama's chat API), whose proposal becomes the memory; a model that answers
// garbage leaves the built-in rules to distill; a bad --distiller is a usage error.
func TestDistillerFlag(t *testing.T) {
	isolate(t)
	var calls atomic.Int32
	var models []string
	answer := `{"actions":[{"event":"add","text":"Alex keeps two beehives on the roof.","turn":0}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Model string `json:"model"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		models = append(models, req.Model)
		content := answer
		if calls.Add(1) > 1 {
			content = "I'm sorry, I can't help with that."
		}
		fmt.Fprintf(w, `{"message":{"role":"assistant","content":%q},"done":false}`+"\n", content)
		fmt.Fprint(w, `{"done":true,"done_reason":"stop"}`+"\n")
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "store")
	llm := []string{"--distiller", "ollama:qwen-test", "--ollama-url", srv.URL}

	mustRun(t, dir, "", "context", "add", "--session", "alex", "--role", "user", "I keep bees on my roof, two hives.")
	mustRun(t, dir, "", append(llm, "context", "distill", "--session", "alex")...)
	if calls.Load() != 1 || len(models) != 1 || models[0] != "qwen-test" {
		t.Fatalf("model asked %d times (%v), want once as qwen-test", calls.Load(), models)
	}
	out := mustRun(t, dir, "", "--json", "list", "--session", "alex")
	if !strings.Contains(out, "Alex keeps two beehives on the roof.") {
		t.Fatalf("the model's memory is not stored:\n%s", out)
	}

	// A garbage answer: the built-in rules distill the turn instead.
	mustRun(t, dir, "", "context", "add", "--session", "alex", "--role", "user", "I moved to Porto last month.")
	mustRun(t, dir, "", append(llm, "context", "distill", "--session", "alex")...)
	if calls.Load() != 2 {
		t.Fatalf("model asked %d times, want 2", calls.Load())
	}
	if out := mustRun(t, dir, "", "--json", "list", "--session", "alex"); !strings.Contains(out, "Porto") {
		t.Fatalf("the rules did not stand in for a failed model:\n%s", out)
	}

	for _, bad := range []string{"gpt", "rules:x"} {
		if _, _, code := memctl(t, dir, "", "--distiller", bad, "context", "distill", "--session", "alex"); code != exitUsage {
			t.Errorf("--distiller %s: exit %d, want %d", bad, code, exitUsage)
		}
	}
}
