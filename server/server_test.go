package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

func newStore(t testing.TB) *memory.Store {
	t.Helper()
	emb, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := memory.Open(filepath.Join(t.TempDir(), "store"), memory.OpenOptions{Options: memory.Options{Embedder: emb, ForgetRetention: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type testServer struct {
	t       testing.TB
	url     string
	token   string
	store   *memory.Store
	handler *Handler
}

func newTestServer(t testing.TB, opts Options) *testServer {
	t.Helper()
	if opts.Store == nil {
		opts.Store = newStore(t)
	}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close(context.Background()) })
	return &testServer{t: t, url: srv.URL, token: opts.Token, store: opts.Store, handler: h}
}

// do sends body (JSON-encoded unless it is a string) and decodes the answer
// into out; it returns the status code.
func (s *testServer) do(method, path string, body, out any) int {
	s.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		r = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, s.url+path, r)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: status %d, undecodable body %q", method, path, resp.StatusCode, data)
		}
	}
	return resp.StatusCode
}

func (s *testServer) count() int {
	n, err := s.store.Count(context.Background(), nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}

func TestRememberRecallForget(t *testing.T) {
	s := newTestServer(t, Options{})
	var rem RememberResponse
	if code := s.do("POST", "/v1/remember", RememberRequest{Session: "alice", Text: "Alice prefers green tea.", Tags: []string{"drinks"}}, &rem); code != 200 || len(rem.IDs) != 1 {
		t.Fatalf("remember: %d %+v", code, rem)
	}
	s.do("POST", "/v1/remember", RememberRequest{Session: "bob", Text: "Bob 喜欢喝咖啡。"}, nil)

	var rec RecallResponse
	if code := s.do("POST", "/v1/recall", RecallRequest{Query: "green tea", Session: "alice", PromptTokens: 200}, &rec); code != 200 {
		t.Fatalf("recall: %d", code)
	}
	if len(rec.Results) != 1 || rec.Results[0].ID != rem.IDs[0] || rec.Results[0].Score.Final <= 0 || !strings.Contains(rec.Prompt, "green tea") {
		t.Fatalf("recall = %+v", rec)
	}
	// An unknown session is an empty result, not an error.
	if code := s.do("POST", "/v1/recall", RecallRequest{Query: "tea", Session: "nobody"}, &rec); code != 200 || len(rec.Results) != 0 {
		t.Fatalf("unknown session: %d %+v", code, rec)
	}
	var sessions struct{ Sessions []SessionJSON }
	if s.do("GET", "/v1/sessions", nil, &sessions); len(sessions.Sessions) != 2 {
		t.Fatalf("sessions = %+v", sessions)
	}
	var forgot ForgetResponse
	if code := s.do("POST", "/v1/forget", ForgetRequest{IDs: rem.IDs}, &forgot); code != 200 || forgot.Forgotten != 1 {
		t.Fatalf("forget: %d %v", code, forgot)
	}
	bob := "bob"
	if s.do("POST", "/v1/forget", ForgetRequest{Session: &bob, All: true}, &forgot); forgot.Forgotten != 1 || s.count() != 0 {
		t.Fatalf("forget session: %v, %d left", forgot, s.count())
	}
	var st memory.Stats
	if code := s.do("GET", "/v1/stats", nil, &st); code != 200 || st.Memories != 0 || st.Dim != lexical.DefaultDim {
		t.Fatalf("stats: %d %+v", code, st)
	}
}

func TestBadRequestsWriteNothing(t *testing.T) {
	s := newTestServer(t, Options{MaxBodyBytes: 4096})
	for _, tc := range []struct {
		name, path, body string
		want             int
	}{
		{"malformed JSON", "/v1/remember", `{"session": "a", "text": `, 400},
		{"not an object", "/v1/remember", `["text"]`, 400},
		{"unknown field", "/v1/remember", `{"session": "a", "txt": "typo"}`, 400},
		{"trailing data", "/v1/remember", `{"text": "a"} {"text": "b"}`, 400},
		{"empty body", "/v1/remember", ``, 400},
		{"empty text", "/v1/remember", `{"session": "a", "text": "  "}`, 400},
		{"bad importance", "/v1/remember", `{"text": "x", "importance": 7}`, 400},
		{"too large", "/v1/remember", `{"text": "` + strings.Repeat("a", 5000) + `"}`, 413},
		{"bad k", "/v1/recall", `{"query": "x", "k": -1}`, 400},
		{"bad mode", "/v1/recall", `{"query": "x", "mode": "psychic"}`, 400},
		{"negative weight", "/v1/recall", `{"query": "x", "vector_weight": -1}`, 400},
		{"forget nothing", "/v1/forget", `{}`, 400},
	} {
		var e map[string]string
		if code := s.do("POST", tc.path, tc.body, &e); code != tc.want || e["error"] == "" {
			t.Errorf("%s: status %d, body %v; want %d with an error message", tc.name, code, e, tc.want)
		}
	}
	if n := s.count(); n != 0 {
		t.Fatalf("bad requests wrote %d memories", n)
	}
	var e map[string]string
	if code := s.do("GET", "/v1/nope", nil, &e); code != 404 {
		t.Fatalf("unknown route: %d", code)
	}
}

func TestAuth(t *testing.T) {
	s := newTestServer(t, Options{Token: "s3cret"})
	s.token = ""
	var e map[string]string
	if code := s.do("POST", "/v1/remember", RememberRequest{Text: "x"}, &e); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	s.token = "wrong"
	if code := s.do("GET", "/metrics", nil, nil); code != 401 {
		t.Fatalf("wrong token on /metrics: %d", code)
	}
	if code := s.do("GET", "/healthz", nil, nil); code != 200 {
		t.Fatalf("healthz needs no token: %d", code)
	}
	if s.count() != 0 {
		t.Fatal("unauthorized request wrote")
	}
	s.token = "s3cret"
	if code := s.do("POST", "/v1/remember", RememberRequest{Text: "x marks the spot"}, nil); code != 200 || s.count() != 1 {
		t.Fatalf("right token: %d", code)
	}
}

func TestListenRequiresTokenOffLoopback(t *testing.T) {
	h, err := New(Options{Store: newStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := ListenAndServe(context.Background(), "0.0.0.0:0", h, time.Second, nil); err != ErrTokenRequired {
		t.Fatalf("err = %v", err)
	}
	for addr, want := range map[string]bool{"127.0.0.1:7077": true, "localhost:1": true, "[::1]:80": true, "0.0.0.0:1": false, ":7077": false, "10.0.0.1:1": false, "bad": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) = %v", addr, !want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		done <- ListenAndServe(ctx, "127.0.0.1:0", h, time.Second, func(a net.Addr) { ready <- a.String() })
	}()
	addr := <-ready
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
}

func TestShortTermAndTasks(t *testing.T) {
	s := newTestServer(t, Options{})
	var conv memory.Conversation
	if code := s.do("POST", "/v1/sessions/alice/turns", memory.Turn{Role: "user", Text: "I move to Berlin in May."}, &conv); code != 200 || len(conv.Turns) != 1 {
		t.Fatalf("add turn: %d %+v", code, conv)
	}
	if s.do("GET", "/v1/sessions/alice/context", nil, &conv); len(conv.Turns) != 1 || conv.Turns[0].Text != "I move to Berlin in May." {
		t.Fatalf("context = %+v", conv)
	}
	s.do("DELETE", "/v1/sessions/alice/context", nil, nil)
	if s.do("GET", "/v1/sessions/alice/context", nil, &conv); len(conv.Turns) != 0 {
		t.Fatalf("context after clear = %+v", conv)
	}

	var task memory.Task
	if code := s.do("POST", "/v1/tasks", StartTaskRequest{ID: "t1", Goal: "ship"}, &task); code != 201 || task.Status != memory.TaskActive {
		t.Fatalf("start: %d %+v", code, task)
	}
	if code := s.do("POST", "/v1/tasks/t1/steps", StepRequest{Name: "build", Status: memory.StepDone, Result: json.RawMessage(`{"ok":true}`), Next: "deploy"}, &task); code != 200 || task.Next != "deploy" {
		t.Fatalf("step: %d %+v", code, task)
	}
	if code := s.do("POST", "/v1/tasks/t1/finish", `{}`, &task); code != 200 || task.Status != memory.TaskDone {
		t.Fatalf("finish: %d %+v", code, task)
	}
	var list struct{ Tasks []memory.Task }
	if s.do("GET", "/v1/tasks", nil, &list); len(list.Tasks) != 1 {
		t.Fatalf("tasks = %+v", list)
	}
	var e map[string]string
	if code := s.do("GET", "/v1/tasks/nope", nil, &e); code != 404 {
		t.Fatalf("unknown task: %d", code)
	}
	if code := s.do("DELETE", "/v1/tasks/t1", nil, nil); code != 200 {
		t.Fatalf("delete: %d", code)
	}
}

func TestMetricsAndOpenAPI(t *testing.T) {
	s := newTestServer(t, Options{})
	s.do("POST", "/v1/remember", RememberRequest{Text: "metrics matter"}, nil)
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`engram_http_request_duration_seconds_bucket{code="200",key="local",route="POST /v1/remember"`, "engram_memories 1", "engram_sessions 1", "engram_disk_bytes "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	var doc struct {
		OpenAPI string
		Paths   map[string]any
	}
	if code := s.do("GET", "/openapi.json", nil, &doc); code != 200 || doc.OpenAPI == "" {
		t.Fatalf("openapi: %d", code)
	}
	// Every API route is documented.
	for _, p := range []string{"/v1/remember", "/v1/recall", "/v1/forget", "/v1/sessions", "/v1/sessions/{session}/context",
		"/v1/sessions/{session}/turns", "/v1/tasks", "/v1/tasks/{id}", "/v1/tasks/{id}/steps", "/v1/tasks/{id}/finish", "/v1/stats", "/healthz", "/metrics", "/mcp"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("openapi.json lacks %s", p)
		}
	}
}

func TestConcurrentClients(t *testing.T) {
	s := newTestServer(t, Options{})
	const clients, each = 8, 10
	errs := make(chan error, clients)
	for c := 0; c < clients; c++ {
		go func() {
			for i := 0; i < each; i++ {
				session := fmt.Sprintf("s%d", c)
				var rem RememberResponse
				if code := s.do("POST", "/v1/remember", RememberRequest{Session: session, Text: fmt.Sprintf("fact number %d of client %d: token%dx%d", i, c, c, i)}, &rem); code != 200 {
					errs <- fmt.Errorf("remember: %d", code)
					return
				}
				var rec RecallResponse
				if code := s.do("POST", "/v1/recall", RecallRequest{Session: session, Query: fmt.Sprintf("token%dx%d", c, i), K: 1}, &rec); code != 200 {
					errs <- fmt.Errorf("recall: %d", code)
					return
				}
				if len(rec.Results) != 1 || rec.Results[0].ID != rem.IDs[0] {
					errs <- fmt.Errorf("client %d fact %d: recalled %+v", c, i, rec.Results)
					return
				}
			}
			errs <- nil
		}()
	}
	for c := 0; c < clients; c++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := s.count(); n != clients*each {
		t.Fatalf("%d memories, want %d", n, clients*each)
	}
}
