package server

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

// The tests of this file hold the service to what a key's rights say in every answer (issue
// 23, item 8).

// writeOnlyProbes are probes beyond routeProbes and mcpProbes for the cases a write-only key
// was seen reading through: a cleanup dry run selecting everything.
var (
	writeOnlyProbes = map[string][]probe{
		"POST /v1/cleanup": {
			{method: "POST", path: "/v1/cleanup", body: `{"dry_run":true,"older_than":"1ns","include_recalled":true}`},
			{method: "POST", path: "/v1/cleanup", body: `{"session":$session,"dry_run":true,"older_than":"1ns","include_recalled":true}`},
			{method: "POST", path: "/v1/cleanup", body: `{"older_than":"1ns","include_recalled":true}`},
		},
		"POST /v1/tasks": {{method: "POST", path: "/v1/tasks", body: `{"session":$session,"id":"mine","goal":"new work"}`}},
	}
	writeOnlyMCPProbes = map[string][]mcpProbe{
		"update_step": {{args: `{"id":$task,"name":"probe","status":"done","next":"more"}`}},
	}
)

// TestWriteOnlyKeyGetsNoStoredText: a key with the write right alone gets no stored text back
// from any route or MCP tool: every route of the route table and every tool is called with it
// against its own session, whose memories, tags, conversation and task carry a marker, and no
// answer may hold the marker (writes answer with IDs and counts only). The quoted cases: a
// cleanup dry run listed every memory's text; adding a turn answered the whole conversation,
// recording a step the task's goal, an update the memory's text.
func TestWriteOnlyKeyGetsNoStoredText(t *testing.T) {
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	secret, err := AddKey(keysFile, "writer", Scope{"alice"}, RightWrite)
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"writer": secret}
	h, err := New(Options{Store: newMemStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	leaks := func(body string) bool { return strings.Contains(body, "SECRET") }
	probed := 0
	for _, rt := range h.routes {
		probes := append(slices.Clone(routeProbes[rt.Pattern]), writeOnlyProbes[rt.Pattern]...)
		for pi, p := range probes {
			store := newMemStore(t)
			if p.disk {
				store = newStore(t)
			}
			s := newSuiteServerOn(t, store, keysFile, secrets)
			tg := seed(t, s.store, []string{"alice"})["alice"]
			code, body := s.send(t, p, tg, secret)
			s.h.jobs.wg.Wait()
			probed++
			if leaks(body) {
				t.Errorf("%s#%d (%s %s %s): %d, the write-only key got stored text: %.400s", rt.Pattern, pi, p.method, p.path, p.body, code, body)
			}
		}
	}
	for tool, probes := range mcpProbes {
		for pi, p := range append(slices.Clone(probes), writeOnlyMCPProbes[tool]...) {
			s := newSuiteServer(t, keysFile, secrets)
			tg := seed(t, s.store, []string{"alice"})["alice"]
			cs := connectMCP(t, s.url, secret)
			failed, out := suiteCallTool(t, cs, tool, tg.fill(p.args, false))
			cs.Close()
			probed++
			if leaks(out) {
				t.Errorf("MCP %s#%d (%s): failed %v, the write-only key got stored text: %.400s", tool, pi, p.args, failed, out)
			}
		}
	}
	if probed < 80 {
		t.Errorf("%d probes; the route table or the tool list shrank?", probed)
	}
}

// wideEmbedder gives every text a pseudo-random 1024-dimensional vector, so that a long text's
// chunks never merge and need several upsert batches.
type wideEmbedder struct{}

func (wideEmbedder) Dim() int            { return 1024 }
func (wideEmbedder) Fingerprint() string { return "test-wide-1024" }
func (wideEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		r := rand.New(rand.NewPCG(h.Sum64(), 7))
		v := make([]float32, 1024)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out, nil
}

// hookBackend calls before ahead of each upsert (counted from 1) into the memories collection;
// an error fails that upsert with nothing of it written.
type hookBackend struct {
	memory.Backend
	before  func(n int) error
	upserts atomic.Int32
}

type hookColl struct {
	memory.Collection
	b *hookBackend
}

func (b *hookBackend) wrap(c memory.Collection, err error) (memory.Collection, error) {
	if err != nil || c.Spec().Name != memory.DefaultCollection {
		return c, err
	}
	return hookColl{c, b}, nil
}

func (b *hookBackend) Collection(ctx context.Context, name string) (memory.Collection, error) {
	return b.wrap(b.Backend.Collection(ctx, name))
}

func (b *hookBackend) CreateCollection(ctx context.Context, spec memory.CollectionSpec) (memory.Collection, error) {
	return b.wrap(b.Backend.CreateCollection(ctx, spec))
}

func (c hookColl) Upsert(ctx context.Context, ms []memory.Memory) error {
	if err := c.b.before(int(c.b.upserts.Add(1))); err != nil {
		return err
	}
	return c.Collection.Upsert(ctx, ms)
}

// longFacts is a text of about n bytes of distinct sentences.
func longFacts(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n-64; i++ {
		fmt.Fprintf(&b, "Fact %d: the crate numbered %d holds %d blue marbles. ", i, i*7, i%97)
		if i%8 == 7 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// TestRememberTimeoutHTTP: a remember whose write outlasts the request timeout stores all its
// chunks and returns their IDs, and one whose later batch fails names the IDs it stored, over
// HTTP and MCP (issue 23: a remember that answered 504 had stored 696 of its 834 chunks, whose
// IDs were never returned).
func TestRememberTimeoutHTTP(t *testing.T) {
	text := longFacts(memory.DefaultMaxTextBytes - 1024)
	const timeout = 2 * time.Second
	serve := func(t *testing.T, timeout time.Duration, before func(int) error) (*testServer, *hookBackend) {
		b := &hookBackend{Backend: memory.NewMemBackend(), before: before}
		store, err := memory.New(context.Background(), b, memory.Options{Embedder: wideEmbedder{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		return newTestServer(t, Options{Store: store, RequestTimeout: timeout}), b
	}
	stored := func(t *testing.T, s *testServer) []string {
		var ids []string
		if err := s.store.Scan(context.Background(), memory.Eq(memory.FieldSession, "alice"), func(m memory.Memory) error {
			ids = append(ids, m.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		return ids
	}
	body, _ := json.Marshal(RememberRequest{Session: "alice", Text: text})

	t.Run("timeout while writing", func(t *testing.T) {
		var sent time.Time
		s, b := serve(t, timeout, func(n int) error {
			if n == 2 { // the first batch is durable; now the deadline passes
				time.Sleep(time.Until(sent.Add(timeout + 300*time.Millisecond)))
			}
			return nil
		})
		sent = time.Now()
		code, out := rawDo(t, s, "POST", "/v1/remember", string(body))
		if n := b.upserts.Load(); n == 0 && code == http.StatusGatewayTimeout {
			t.Skipf("embedding took longer than the %v timeout here: nothing was written, the case is not reached", timeout)
		} else if n < 2 {
			t.Fatalf("%d upserts: the text should need several batches", n)
		}
		have := stored(t, s)
		var resp RememberResponse
		_ = json.Unmarshal([]byte(out), &resp)
		slices.Sort(resp.IDs)
		if code != 200 || !slices.Equal(resp.IDs, have) {
			t.Fatalf("remember: %d, %d IDs returned; the session holds %d memories (%.200s)", code, len(resp.IDs), len(have), out)
		}
	})

	t.Run("later batch fails", func(t *testing.T) {
		// No deadline in play here: a loaded machine must not turn the case into a 504.
		s, _ := serve(t, time.Minute, func(n int) error {
			if n%2 == 0 { // the second batch of each remember
				return fmt.Errorf("injected: %w", syscall.ENOSPC)
			}
			return nil
		})
		code, out := rawDo(t, s, "POST", "/v1/remember", string(body))
		var resp struct {
			Error     string   `json:"error"`
			StoredIDs []string `json:"stored_ids"`
		}
		if err := json.Unmarshal([]byte(out), &resp); err != nil {
			t.Fatal(err)
		}
		have := stored(t, s)
		slices.Sort(resp.StoredIDs)
		if code != http.StatusInsufficientStorage || len(have) == 0 || !slices.Equal(resp.StoredIDs, have) {
			t.Fatalf("remember: %d, %d stored IDs reported, the session holds %d (%.300s)", code, len(resp.StoredIDs), len(have), out)
		}
		// The MCP tool says the same in its error.
		cs := mcpAs(t, s, "")
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "remember", Arguments: map[string]any{"session": "bob", "text": text}})
		if err != nil {
			t.Fatal(err)
		}
		var bob []string
		_ = s.store.Scan(context.Background(), memory.Eq(memory.FieldSession, "bob"), func(m memory.Memory) error { bob = append(bob, m.ID); return nil })
		msg := toolText(res)
		if !res.IsError || len(bob) == 0 {
			t.Fatalf("MCP remember: error %v, %d stored: %.200s", res.IsError, len(bob), msg)
		}
		for _, id := range bob {
			if !strings.Contains(msg, id) {
				t.Fatalf("the MCP error does not name stored ID %s: %.300s", id, msg)
			}
		}
	})
}

// mcpRaw sends one JSON-RPC message to /mcp in session sid ("" starts one) and returns the
// status, the session ID of the answer and its body.
func mcpRaw(t *testing.T, s *testServer, sid, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("POST", s.url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(data)
}

const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// mcpOpen starts an MCP session and returns its ID.
func mcpOpen(t *testing.T, s *testServer) string {
	t.Helper()
	code, sid, body := mcpRaw(t, s, "", mcpInitialize)
	if code != 200 || sid == "" {
		t.Fatalf("initialize: %d, session %q: %.300s", code, sid, body)
	}
	if code, _, body := mcpRaw(t, s, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %.300s", code, body)
	}
	return sid
}

// mcpPing reports the status a ping in session sid answers (404: no such session).
func mcpPing(t *testing.T, s *testServer, sid string) int {
	t.Helper()
	code, _, _ := mcpRaw(t, s, sid, `{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	return code
}

// TestMCPBodyLimit: MCP refuses a body over Options.MaxBodyBytes with 413 as the HTTP routes do
// (issue 23: a recall tool call with a 100,000-key filter, 3.8 MB, went through MCP while
// /v1/recall answered 413).
func TestMCPBodyLimit(t *testing.T) {
	s := newTestServer(t, Options{Store: newMemStore(t)})
	var f strings.Builder
	f.WriteString(`{`)
	for i := range 100_000 {
		if i > 0 {
			f.WriteString(`,`)
		}
		fmt.Fprintf(&f, `"metadata.key%06d":"value-%06d"`, i, i)
	}
	f.WriteString(`}`)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recall","arguments":{"session":"alice","query":"x","filter":` + f.String() + `}}}`
	if len(call) < 3<<20 {
		t.Fatalf("the call is only %d bytes", len(call))
	}
	if code, out := rawDo(t, s, "POST", "/v1/recall", `{"session":"alice","query":"x","filter":`+f.String()+`}`); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("/v1/recall: %d %.200s", code, out)
	}
	sid := mcpOpen(t, s)
	code, _, out := mcpRaw(t, s, sid, call)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(out, `"error"`) {
		t.Fatalf("MCP: %d %.300s, want 413 with a JSON error", code, out)
	}
	if code := mcpPing(t, s, sid); code != 200 {
		t.Fatalf("the session after a refused call: ping %d", code)
	}
}

// TestMCPToolTimeout: a tool call runs under Options.RequestTimeout like an HTTP request, and
// says so when it runs past it.
func TestMCPToolTimeout(t *testing.T) {
	emb, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{}) // never opens: the embedder waits for its context
	defer close(gate)
	store, err := memory.New(context.Background(), memory.NewMemBackend(), memory.Options{Embedder: gatedEmbedder{emb, gate}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	s := newTestServer(t, Options{Store: store, RequestTimeout: 300 * time.Millisecond})
	cs := mcpAs(t, s, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"remember", map[string]any{"session": "alice", "text": "a fact"}},
		{"recall", map[string]any{"session": "alice", "query": "a fact"}},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s: %v (the tool ran past the server's timeout)", tc.tool, err)
		}
		if msg := toolText(res); !res.IsError || !strings.Contains(msg, "time limit") {
			t.Fatalf("%s: error %v: %.200s", tc.tool, res.IsError, msg)
		}
	}
}

// TestMCPSessionsExpire: an MCP session idle for Options.MCPSessionIdle is closed (issue 23:
// idle sessions never expired, and 20,000 initialize calls grew the server from 97 to 276 MB);
// one in use is not.
func TestMCPSessionsExpire(t *testing.T) {
	s := newTestServer(t, Options{Store: newMemStore(t), MCPSessionIdle: 300 * time.Millisecond})
	idle, busy := mcpOpen(t, s), mcpOpen(t, s)
	deadline := time.Now().Add(10 * time.Second)
	for s.handler.mcpSessionCount() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions held after 10 s, want the one in use", s.handler.mcpSessionCount())
		}
		if code := mcpPing(t, s, busy); code != 200 {
			t.Fatalf("the session in use: ping %d", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := mcpPing(t, s, idle); code != http.StatusNotFound {
		t.Fatalf("the idle session: ping %d, want 404", code)
	}
	if code := mcpPing(t, s, busy); code != 200 {
		t.Fatalf("the session in use: ping %d", code)
	}
}

// TestMCPSessionsBounded: past Options.MCPMaxSessions a new session closes the one idle the
// longest; while every session has a request in flight (an open event stream), a new one is
// refused with 503 and says why.
func TestMCPSessionsBounded(t *testing.T) {
	s := newTestServer(t, Options{Store: newMemStore(t), MCPMaxSessions: 3})
	var sids []string
	for range 3 {
		sids = append(sids, mcpOpen(t, s))
	}
	if code := mcpPing(t, s, sids[0]); code != 200 { // sids[1] is now the one idle longest
		t.Fatalf("ping: %d", code)
	}
	sids = append(sids, mcpOpen(t, s))
	for i, want := range []int{200, 404, 200, 200} {
		if code := mcpPing(t, s, sids[i]); code != want {
			t.Fatalf("session %d: ping %d, want %d", i, code, want)
		}
	}
	if n := s.handler.mcpSessionCount(); n != 3 {
		t.Fatalf("%d sessions held, want 3", n)
	}
	// Hold an event stream open in each live session: none is idle.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, sid := range []string{sids[0], sids[2], sids[3]} {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("event stream: %d", resp.StatusCode)
		}
	}
	code, sid, body := mcpRaw(t, s, "", mcpInitialize)
	if code != http.StatusServiceUnavailable || sid != "" || !strings.Contains(body, "sessions") {
		t.Fatalf("a fourth session while all are busy: %d %q %.300s", code, sid, body)
	}
	cancel() // the streams end: the sessions are idle again
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, sid, _ := mcpRaw(t, s, "", mcpInitialize)
		if code == 200 && sid != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new session once the streams ended: %d", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sendWith is send with extra request headers.
func (s *suiteServer) sendWith(t testing.TB, p probe, tg target, headers map[string]string) (int, string) {
	t.Helper()
	var body io.Reader
	if p.body != "" {
		body = strings.NewReader(tg.fill(p.body, false))
	}
	req, err := http.NewRequest(p.method, s.url+tg.fill(p.path, true), body)
	if err != nil {
		t.Fatal(err)
	}
	if p.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if p.path == "/mcp" {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestCrossSiteFetchRefused: a request a browser marks as sent by another site (Sec-Fetch-Site
// cross-site or same-site) is refused on every route, before it runs, on a keyless loopback
// server (issue 23: an <img> on any web page, sending no Origin, started a full backup job with
// GET /v1/admin/backup.tar). Requests of the dashboard itself (same-origin), of the user
// (none) and of programs (no header) pass.
func TestCrossSiteFetchRefused(t *testing.T) {
	h, err := New(Options{Store: newMemStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The quoted case first, as the page sent it.
	s := newSuiteServerOn(t, newStore(t), "", nil)
	code, body := s.sendWith(t, probe{method: "GET", path: "/v1/admin/backup.tar"}, target{},
		map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"})
	s.h.jobs.wg.Wait()
	if code != http.StatusForbidden || len(s.h.jobs.list()) != 0 {
		t.Fatalf("a cross-site <img> of GET /v1/admin/backup.tar: %d, jobs %+v (%.200s)", code, s.h.jobs.list(), body)
	}
	for _, rt := range h.routes {
		for pi, p := range routeProbes[rt.Pattern] {
			for _, site := range []string{"cross-site", "same-site"} {
				store := newMemStore(t)
				if p.disk {
					store = newStore(t)
				}
				s := newSuiteServerOn(t, store, "", nil)
				tg := seed(t, s.store, []string{"alice"})["alice"]
				before := snapshot(t, s.store, "alice")
				code, body := s.sendWith(t, p, tg, map[string]string{"Sec-Fetch-Site": site})
				s.h.jobs.wg.Wait()
				if code != http.StatusForbidden || !strings.Contains(body, "Sec-Fetch-Site") {
					t.Errorf("%s#%d with Sec-Fetch-Site %s: %d %.200s", rt.Pattern, pi, site, code, body)
				}
				if after := snapshot(t, s.store, "alice"); after != before || len(s.h.jobs.list()) != 0 {
					t.Errorf("%s#%d with Sec-Fetch-Site %s changed the store or started a job", rt.Pattern, pi, site)
				}
			}
		}
	}
	// The page itself, the user, and programs pass the guard.
	for _, site := range []string{"same-origin", "none", ""} {
		s := newSuiteServerOn(t, newMemStore(t), "", nil)
		hdr := map[string]string{}
		if site != "" {
			hdr["Sec-Fetch-Site"] = site
		}
		if code, body := s.sendWith(t, probe{method: "GET", path: "/v1/sessions"}, target{}, hdr); code != 200 {
			t.Errorf("Sec-Fetch-Site %q: %d %.200s", site, code, body)
		}
	}
}

// TestNoGetStartsAJob: no GET route starts a job or changes the store: every GET probe of the
// route table runs with every right (a keyless loopback server), and afterwards the job list is
// empty and the stored data as it was.
func TestNoGetStartsAJob(t *testing.T) {
	h, err := New(Options{Store: newMemStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rt := range h.routes {
		for pi, p := range routeProbes[rt.Pattern] {
			if p.method != "GET" {
				continue
			}
			n++
			store := newMemStore(t)
			if p.disk {
				store = newStore(t)
			}
			s := newSuiteServerOn(t, store, "", nil)
			tg := seed(t, s.store, []string{"alice"})["alice"]
			before := snapshot(t, s.store, "alice")
			code, _ := s.send(t, p, tg, "")
			s.h.jobs.wg.Wait()
			if jobs := s.h.jobs.list(); len(jobs) != 0 {
				t.Errorf("GET %s#%d (%d) started a job: %+v", rt.Pattern, pi, code, jobs)
			}
			if after := snapshot(t, s.store, "alice"); after != before {
				t.Errorf("GET %s#%d changed the store", rt.Pattern, pi)
			}
		}
	}
	if n < 15 {
		t.Errorf("only %d GET probes", n)
	}
}

// TestTaskIDsPerSession: task IDs are per session, so a key learns nothing about tasks outside
// its scope by starting one (issue 23: a writer for alice got 400 "task exists" for the ID of a
// task of bob's, 201 for others); each key reaches its own session's task of an ID, and a key
// that sees several names the session.
func TestTaskIDsPerSession(t *testing.T) {
	s, sec, _ := keyedServer(t, map[string]keySpec{
		"alice": {Scope{"alice"}, RightWrite},
		"rw":    {Scope{"alice"}, RightRead | RightWrite},
		"admin": {Scope{"*"}, AllRights},
	})
	jsonCT := map[string]string{"Content-Type": "application/json"}
	if _, err := s.store.StartSessionTask(context.Background(), "bob", "plan", "bob's SECRET plan"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"plan", "other"} {
		code, out := s.as(sec["alice"]).rawRequestBody("POST", "/v1/tasks", `{"session":"alice","id":"`+id+`","goal":"alice's plan"}`, jsonCT)
		if code != http.StatusCreated {
			t.Fatalf("alice starts task %q: %d %s", id, code, out)
		}
	}
	// The same ID twice in one session is still refused.
	if code, out := s.as(sec["alice"]).rawRequestBody("POST", "/v1/tasks", `{"session":"alice","id":"plan","goal":"again"}`, jsonCT); code != http.StatusBadRequest {
		t.Fatalf("alice starts task plan again: %d %s", code, out)
	}
	// Each key reaches its own session's task of the ID.
	rw := s.as(sec["rw"])
	if code, out := rw.rawRequestBody("POST", "/v1/tasks/plan/steps", `{"name":"draft","status":"done"}`, jsonCT); code != 200 || !strings.Contains(out, "alice's plan") || strings.Contains(out, "SECRET") {
		t.Fatalf("rw records a step of plan: %d %s", code, out)
	}
	if code, out := rw.rawRequestBody("GET", "/v1/tasks/plan", "", jsonCT); code != 200 || !strings.Contains(out, `"draft"`) {
		t.Fatalf("rw reads plan: %d %s", code, out)
	}
	if code, out := rw.rawRequestBody("GET", "/v1/tasks/plan?session=bob", "", jsonCT); code != http.StatusNotFound || strings.Contains(out, "SECRET") {
		t.Fatalf("rw reads bob's plan: %d %s", code, out)
	}
	bob, err := s.store.SessionTask(context.Background(), "bob", "plan")
	if err != nil || len(bob.Steps) != 0 || bob.Goal != "bob's SECRET plan" {
		t.Fatalf("bob's task: %+v %v", bob, err)
	}
	// The admin sees both: it names the session.
	admin := s.as(sec["admin"])
	if code, out := admin.rawRequestBody("GET", "/v1/tasks/plan", "", jsonCT); code != http.StatusBadRequest || !strings.Contains(out, "session") {
		t.Fatalf("admin reads plan without a session: %d %s", code, out)
	}
	if code, out := admin.rawRequestBody("GET", "/v1/tasks/plan?session=bob", "", jsonCT); code != 200 || !strings.Contains(out, "bob's SECRET plan") {
		t.Fatalf("admin reads bob's plan: %d %s", code, out)
	}
	if code, out := admin.rawRequestBody("DELETE", "/v1/tasks/plan?session=alice", "", jsonCT); code != 200 {
		t.Fatalf("admin deletes alice's plan: %d %s", code, out)
	}
	if code, out := admin.rawRequestBody("GET", "/v1/tasks/plan", "", jsonCT); code != 200 || !strings.Contains(out, "bob's SECRET plan") {
		t.Fatalf("admin reads plan, now only bob's: %d %s", code, out)
	}
	// MCP: the same.
	cs := mcpAs(t, s, sec["rw"])
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "start_task", Arguments: map[string]any{"session": "alice", "id": "plan", "goal": "alice's plan again"}})
	if err != nil || res.IsError {
		t.Fatalf("MCP start_task plan: %v %s", err, toolText(res))
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "task", Arguments: map[string]any{"id": "plan"}})
	if err != nil || res.IsError || !strings.Contains(toolText(res), "alice's plan again") {
		t.Fatalf("MCP task plan: %v %s", err, toolText(res))
	}
}

// TestMCPUnknownSessionsCostNothing: requests naming sessions that do not exist are answered
// 404 and leave nothing behind.
func TestMCPUnknownSessionsCostNothing(t *testing.T) {
	s := newTestServer(t, Options{Store: newMemStore(t)})
	for i := range 50 {
		if code := mcpPing(t, s, fmt.Sprintf("bogus-%d", i)); code != http.StatusNotFound {
			t.Fatalf("ping in an unknown session: %d", code)
		}
	}
	s.handler.mcpSessions.mu.Lock()
	n := len(s.handler.mcpSessions.use)
	s.handler.mcpSessions.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d sessions tracked after requests naming unknown ones", n)
	}
}
