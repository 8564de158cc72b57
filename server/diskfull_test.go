package server

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/internal/vfs"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

// TestDiskFull is the reported scenario end to end, over HTTP and MCP: the
// disk under a running server fills up. Every write route answers 507 with
// a JSON error that says so (MCP: a tool error saying the same), recalls
// keep answering 200 (recording the access is best effort, counted in
// /metrics), and once space is freed the next remember answers 200 on the
// same server, without a restart.
func TestDiskFull(t *testing.T) {
	emb, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	full := vfs.NewFull(vfs.OS)
	store, err := memory.Open(filepath.Join(t.TempDir(), "store"), memory.OpenOptions{
		Options: memory.Options{Embedder: emb}, Engine: engine.Options{FS: full, CompactInterval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	s := newTestServer(t, Options{Store: store})
	var rem RememberResponse
	if code := s.do("POST", "/v1/remember", RememberRequest{Session: "alice", Text: "Alice keeps bees in the garden"}, &rem); code != 200 {
		t.Fatalf("remember: %d", code)
	}
	recall := func(when string) {
		t.Helper()
		var out RecallResponse
		if code := s.do("POST", "/v1/recall", RecallRequest{Session: "alice", Query: "bees"}, &out); code != 200 || len(out.Results) == 0 {
			t.Fatalf("recall %s: %d %+v", when, code, out)
		}
	}
	recall("before")
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := NewMCP(store).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	full.SetFull(true)
	for _, w := range []struct{ method, path, body string }{
		{"POST", "/v1/remember", `{"session":"alice","text":"Alice's sister plays the cello"}`},
		{"POST", "/v1/forget", `{"ids":["` + rem.IDs[0] + `"]}`},
		{"PATCH", "/v1/memories/" + rem.IDs[0], `{"text":"Alice keeps three hives"}`},
		{"POST", "/v1/sessions/alice/turns", `{"role":"user","text":"hello"}`},
		{"POST", "/v1/tasks", `{"id":"trip","goal":"plan the trip","session":"alice"}`},
	} {
		code, body := rawDo(t, s, w.method, w.path, w.body)
		if code != http.StatusInsufficientStorage || !strings.Contains(body, `"error":"insufficient storage: the disk holding the store is full`) ||
			!strings.Contains(body, "no space left on device") {
			t.Fatalf("%s %s on a full disk: %d %s, want 507 with a JSON error saying the disk is full", w.method, w.path, code, body)
		}
	}
	recall("while full")
	recall("while full, again")
	for _, path := range []string{"/v1/memories?session=alice", "/v1/memories/" + rem.IDs[0], "/v1/sessions/alice/context",
		"/v1/tasks", "/v1/sessions", "/v1/stats", "/v1/memories/" + rem.IDs[0] + "/history"} {
		if code, body := rawDo(t, s, "GET", path, ""); code != 200 {
			t.Fatalf("GET %s on a full disk: %d %s", path, code, body)
		}
	}
	res := callTool(t, cs, "remember", map[string]any{"session": "alice", "text": "Alice's sister plays the cello"})
	if !res.IsError || !strings.Contains(toolText(res), "insufficient storage: the disk holding the store is full") {
		t.Fatalf("MCP remember on a full disk: %v %q", res.IsError, toolText(res))
	}
	if res := callTool(t, cs, "recall", map[string]any{"session": "alice", "query": "bees"}); res.IsError || !strings.Contains(toolText(res), "bees") {
		t.Fatalf("MCP recall on a full disk: %v %q", res.IsError, toolText(res))
	}
	if n := store.TouchFailures(); n != 3 {
		t.Fatalf("TouchFailures = %d, want 3 (two HTTP recalls, one MCP)", n)
	}
	if _, body := rawDo(t, s, "GET", "/metrics", ""); !strings.Contains(body, "engram_touch_failures_total 3") {
		t.Fatalf("/metrics lacks engram_touch_failures_total 3")
	}

	full.SetFull(false) // space freed; the same server, no restart
	if code := s.do("POST", "/v1/remember", RememberRequest{Session: "alice", Text: "Alice's sister plays the cello"}, nil); code != 200 {
		t.Fatalf("the first remember after space was freed: %d", code)
	}
	if res := callTool(t, cs, "remember", map[string]any{"session": "alice", "text": "Alice flies to Lisbon in May"}); res.IsError {
		t.Fatalf("MCP remember after space was freed: %q", toolText(res))
	}
	recall("after")
	if n := s.count(); n != 3 {
		t.Fatalf("%d memories, want the first and the two written after space was freed", n)
	}
}

// TestUnsupportedIs501: an operation the backend does not have (a flush of
// the in-memory backend) is 501 Not Implemented, not a server error.
func TestUnsupportedIs501(t *testing.T) {
	s := newTestServer(t, Options{Store: newMemStore(t)})
	if code, body := rawDo(t, s, "POST", "/v1/admin/flush", `{}`); code != http.StatusNotImplemented || !strings.Contains(body, "not supported") {
		t.Fatalf("flush of the in-memory backend: %d %s, want 501", code, body)
	}
}

func rawDo(t *testing.T, s *testServer, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
