package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

// This file is the security suite's route side: every route of the route
// table (Handler.routes) and every MCP tool is probed with keys of every
// right and scope. A route or tool without a probe fails the tests, so a
// new one must say here what it does with a foreign session.

// probe is one request a route answers. Its path and body may hold
// placeholders filled from the target session:
//
//	$session  the session (URL-escaped in a path, JSON-escaped in a body)
//	$task     the ID of a task of the session
//	$memory   the ID of a memory of the session ($memoryq: as a JSON string)
//	$ids      a JSON array with the IDs of the session's memories
type probe struct {
	method, path, body string
	// ok is the status with the right and the target in scope.
	ok int
	// foreign is the status for a target outside the key's scope: 403,
	// 404, or 200 when the route answers with what the key may see (the
	// answer must then hold no foreign data and change nothing foreign).
	foreign int
	// listing marks a probe without a target session: it lists or searches
	// across sessions and must filter by scope.
	listing bool
	// public marks a route answered without a key (after the browser
	// checks): health and the dashboard's static files, which hold no data.
	public bool
	// disk runs the probe on a store on disk (the in-memory backend the
	// suite uses for speed cannot flush or back up).
	disk bool
}

// routeProbes holds the probes of every route pattern. Add one for each
// new route: what an in-scope request answers, and what a request naming
// another key's session answers.
var routeProbes = map[string][]probe{
	"GET /healthz": {{method: "GET", path: "/healthz", ok: 200, foreign: 200, listing: true, public: true}},
	// The dashboard's files, served without a key (accessPublic).
	"GET /{$}": {{method: "GET", path: "/", ok: 200, foreign: 200, listing: true, public: true}},
	"GET /ui/": {{method: "GET", path: "/ui/app.js", ok: 200, foreign: 200, listing: true, public: true},
		{method: "GET", path: "/ui/style.css", ok: 200, foreign: 200, listing: true, public: true}},
	"GET /openapi.json": {{method: "GET", path: "/openapi.json", ok: 200, foreign: 200, listing: true}},
	"GET /metrics":      {{method: "GET", path: "/metrics", ok: 200, foreign: 200, listing: true}},
	"POST /v1/remember": {
		{method: "POST", path: "/v1/remember", body: `{"session":$session,"text":"a new fact about tea"}`, ok: 200, foreign: 403},
		// mem0's scope IDs name the session too.
		{method: "POST", path: "/v1/remember", body: `{"user_id":$session,"run_id":"r1","messages":[{"role":"user","text":"I like green tea."}],"infer":true}`, ok: 200, foreign: 403},
		{method: "POST", path: "/v1/remember", body: `{"agent_id":$session,"text":"an agent's fact about tea"}`, ok: 200, foreign: 403},
	},
	"POST /v1/recall": {
		{method: "POST", path: "/v1/recall", body: `{"session":$session,"query":"SECRET tea","k":50}`, ok: 200, foreign: 403},
		{method: "POST", path: "/v1/recall", body: `{"user_id":$session,"run_id":"r1","query":"SECRET tea","k":50}`, ok: 200, foreign: 403},
		{method: "POST", path: "/v1/recall", body: `{"all_sessions":true,"query":"SECRET tea","k":50,"prompt_tokens":500}`, ok: 200, foreign: 200, listing: true},
		{method: "POST", path: "/v1/recall", body: `{"all_sessions":true,"query":"SECRET","mode":"keyword","k":50}`, ok: 200, foreign: 200, listing: true},
	},
	"POST /v1/forget": {
		// IDs outside the scope are unknown IDs: all or nothing, 404.
		{method: "POST", path: "/v1/forget", body: `{"ids":$ids}`, ok: 200, foreign: 404},
		{method: "POST", path: "/v1/forget", body: `{"session":$session,"all":true}`, ok: 200, foreign: 403},
		// Purging reaches the trash: a forgotten memory outside the scope is unknown.
		{method: "POST", path: "/v1/forget", body: `{"ids":$forgotten,"purge":true}`, ok: 200, foreign: 404},
		{method: "POST", path: "/v1/forget", body: `{"session":$session,"all":true,"purge":true}`, ok: 200, foreign: 403},
		{method: "POST", path: "/v1/forget", body: `{"user_id":$session,"run_id":"r1","all":true}`, ok: 200, foreign: 403},
	},
	"GET /v1/forgotten":                     {{method: "GET", path: "/v1/forgotten", ok: 200, foreign: 200, listing: true}, {method: "GET", path: "/v1/forgotten?session=$session", ok: 200, foreign: 403}},
	"POST /v1/restore":                      {{method: "POST", path: "/v1/restore", body: `{"ids":$forgotten}`, ok: 200, foreign: 404}},
	"POST /v1/admin/forgotten/purge":        {{method: "POST", path: "/v1/admin/forgotten/purge", body: `{}`, ok: 200, listing: true}},
	"GET /v1/sessions":                      {{method: "GET", path: "/v1/sessions", ok: 200, foreign: 200, listing: true}},
	"GET /v1/sessions/{session}/context":    {{method: "GET", path: "/v1/sessions/$session/context", ok: 200, foreign: 403}},
	"POST /v1/sessions/{session}/turns":     {{method: "POST", path: "/v1/sessions/$session/turns", body: `{"role":"user","text":"hello"}`, ok: 200, foreign: 403}},
	"POST /v1/sessions/{session}/distill":   {{method: "POST", path: "/v1/sessions/$session/distill", body: `{}`, ok: 200, foreign: 403}},
	"DELETE /v1/sessions/{session}/context": {{method: "DELETE", path: "/v1/sessions/$session/context", ok: 200, foreign: 403}},
	"GET /v1/tasks":                         {{method: "GET", path: "/v1/tasks", ok: 200, foreign: 200, listing: true}},
	"POST /v1/tasks":                        {{method: "POST", path: "/v1/tasks", body: `{"session":$session,"goal":"new work"}`, ok: 201, foreign: 403}},
	"GET /v1/tasks/{id}":                    {{method: "GET", path: "/v1/tasks/$task", ok: 200, foreign: 404}},
	"POST /v1/tasks/{id}/steps":             {{method: "POST", path: "/v1/tasks/$task/steps", body: `{"name":"probe","status":"done"}`, ok: 200, foreign: 404}},
	"POST /v1/tasks/{id}/finish":            {{method: "POST", path: "/v1/tasks/$task/finish", body: `{}`, ok: 200, foreign: 404}},
	"DELETE /v1/tasks/{id}":                 {{method: "DELETE", path: "/v1/tasks/$task", ok: 200, foreign: 404}},
	"GET /v1/stats":                         {{method: "GET", path: "/v1/stats", ok: 200, foreign: 200, listing: true}},
	"GET /v1/memories": {
		{method: "GET", path: "/v1/memories?session=$session", ok: 200, foreign: 403},
		{method: "GET", path: "/v1/memories?user_id=$session&agent_id=a1", ok: 200, foreign: 403},
		{method: "GET", path: "/v1/memories", ok: 200, foreign: 200, listing: true},
		{method: "GET", path: "/v1/memories?where=%7B%22session%22%3A%22bob%22%7D", ok: 200, foreign: 200, listing: true},
	},
	"GET /v1/memories/{id}":         {{method: "GET", path: "/v1/memories/$memory", ok: 200, foreign: 404}},
	"PATCH /v1/memories/{id}":       {{method: "PATCH", path: "/v1/memories/$memory", body: `{"text":"changed text about tea"}`, ok: 200, foreign: 404}},
	"DELETE /v1/memories/{id}":      {{method: "DELETE", path: "/v1/memories/$memory", ok: 200, foreign: 404}},
	"GET /v1/memories/{id}/history": {{method: "GET", path: "/v1/memories/$memory/history", ok: 200, foreign: 404}},
	"POST /v1/memories/{id}/revert": {{method: "POST", path: "/v1/memories/$memory/revert", body: `{"version":1}`, ok: 200, foreign: 404}},
	"POST /v1/export":               {{method: "POST", path: "/v1/export", body: `{}`, ok: 200, foreign: 200, listing: true}},
	"POST /v1/cleanup": {
		{method: "POST", path: "/v1/cleanup", body: `{"session":$session,"older_than":"180d","dry_run":true}`, ok: 200, foreign: 403},
		{method: "POST", path: "/v1/cleanup", body: `{"older_than":"180d","dry_run":true}`, ok: 200, foreign: 200, listing: true},
		{method: "POST", path: "/v1/cleanup", body: `{"older_than":"180d"}`, ok: 200, foreign: 200, listing: true},
	},
	"GET /v1/admin/stats":            {{method: "GET", path: "/v1/admin/stats", ok: 200, listing: true}},
	"POST /v1/admin/flush":           {{method: "POST", path: "/v1/admin/flush", body: `{}`, ok: 200, listing: true, disk: true}},
	"POST /v1/admin/check":           {{method: "POST", path: "/v1/admin/check", body: `{}`, ok: 202, listing: true}},
	"POST /v1/admin/compact":         {{method: "POST", path: "/v1/admin/compact", body: `{}`, ok: 202, listing: true}},
	"POST /v1/admin/cleanup":         {{method: "POST", path: "/v1/admin/cleanup", body: `{"dry_run":true}`, ok: 202, listing: true}},
	"GET /v1/admin/archive":          {{method: "GET", path: "/v1/admin/archive", ok: 200, listing: true}},
	"POST /v1/admin/archive/restore": {{method: "POST", path: "/v1/admin/archive/restore", body: `{"all":true}`, ok: 202, listing: true}},
	// No --backup-root here: server-side backups are off (403 even for admin).
	"POST /v1/admin/backup":     {{method: "POST", path: "/v1/admin/backup", body: `{"dir":"b1"}`, ok: 403, listing: true}},
	"POST /v1/admin/reembed":    {{method: "POST", path: "/v1/admin/reembed", body: `{"to":"lexical"}`, ok: 403, listing: true}},
	"GET /v1/admin/series":      {{method: "GET", path: "/v1/admin/series", ok: 200, listing: true}},
	"GET /v1/jobs":              {{method: "GET", path: "/v1/jobs", ok: 200, listing: true}},
	"GET /v1/jobs/{id}":         {{method: "GET", path: "/v1/jobs/nosuchjob", ok: 404, listing: true}},
	"POST /v1/jobs/{id}/cancel": {{method: "POST", path: "/v1/jobs/nosuchjob/cancel", body: `{}`, ok: 404, listing: true}},
	"POST /v1/admin/backup.tar": {{method: "POST", path: "/v1/admin/backup.tar", body: `{}`, ok: 200, listing: true, disk: true}},
	"GET /v1/admin/export":      {{method: "GET", path: "/v1/admin/export", ok: 200, listing: true}},
	"POST /v1/admin/import":     {{method: "POST", path: "/v1/admin/import", body: `{"id":"imported1","session":"carol","text":"imported text"}`, ok: 202, listing: true}},
	// /mcp is probed through its tools (mcpProbes); this checks the route
	// itself answers an authenticated initialize.
	"/mcp": {{method: "POST", path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`, ok: 200, foreign: 200, listing: true}},
}

// mcpProbe is one call of an MCP tool, with the right it needs.
type mcpProbe struct {
	args  string // JSON arguments with the placeholders of probe
	right Right
	// foreignIsError: a foreign target makes the call fail (otherwise it
	// succeeds doing nothing foreign).
	foreignIsError bool
	// listing: the call names no session and must filter by scope.
	listing bool
}

// mcpProbes holds the probes of every MCP tool. Add one for each new tool.
var mcpProbes = map[string][]mcpProbe{
	"remember": {{args: `{"session":$session,"text":"a new fact about tea"}`, right: RightWrite, foreignIsError: true},
		{args: `{"user_id":$session,"run_id":"r1","messages":[{"role":"user","text":"I like green tea."}],"infer":true}`, right: RightWrite, foreignIsError: true}},
	"recall":        {{args: `{"session":$session,"query":"SECRET tea","k":50}`, right: RightRead, foreignIsError: true}},
	"forget":        {{args: `{"ids":$ids}`, right: RightWrite, foreignIsError: true}, {args: `{"session":$session,"filter":{"tags":"x"}}`, right: RightWrite, foreignIsError: true}},
	"context":       {{args: `{"session":$session}`, right: RightRead, foreignIsError: true}},
	"add_turn":      {{args: `{"session":$session,"role":"user","text":"hi"}`, right: RightWrite, foreignIsError: true}},
	"clear_context": {{args: `{"session":$session}`, right: RightWrite, foreignIsError: true}},
	"distill":       {{args: `{"session":$session}`, right: RightWrite, foreignIsError: true}},
	"tasks":         {{args: `{}`, right: RightRead, listing: true}},
	"task":          {{args: `{"id":$task}`, right: RightRead, foreignIsError: true}},
	"start_task":    {{args: `{"session":$session,"goal":"new work"}`, right: RightWrite, foreignIsError: true}},
	"update_step":   {{args: `{"id":$task,"name":"probe","status":"done"}`, right: RightWrite, foreignIsError: true}},
	"finish_task":   {{args: `{"id":$task}`, right: RightWrite, foreignIsError: true}},
	"delete_task":   {{args: `{"id":$task}`, right: RightWrite, foreignIsError: true}},
	"get":           {{args: `{"id":$memoryq}`, right: RightRead, foreignIsError: true}},
	"list":          {{args: `{"session":$session}`, right: RightRead, foreignIsError: true}},
	"update":        {{args: `{"id":$memoryq,"text":"changed text about tea"}`, right: RightWrite, foreignIsError: true}},
	"delete":        {{args: `{"id":$memoryq}`, right: RightWrite, foreignIsError: true}},
	"history":       {{args: `{"id":$memoryq}`, right: RightRead, foreignIsError: true}},
	"restore":       {{args: `{"ids":$forgotten}`, right: RightWrite, foreignIsError: true}},
	"revert":        {{args: `{"id":$memoryq,"version":1}`, right: RightWrite, foreignIsError: true}},
	"forgotten":     {{args: `{"session":$session}`, right: RightRead, foreignIsError: true}, {args: `{}`, right: RightRead, listing: true}},
	"sessions":      {{args: `{}`, right: RightRead, listing: true}},
}

// target is what the placeholders stand for.
type target struct {
	session  string
	memories []string
	task     string
	// forgotten: a memory of the session in the trash.
	forgotten []string
}

func (tg target) fill(s string, inPath bool) string {
	ids, _ := json.Marshal(tg.memories)
	sess, _ := json.Marshal(tg.session)
	memory := ""
	if len(tg.memories) > 0 {
		memory = tg.memories[0]
	}
	if inPath {
		return strings.NewReplacer("$session", url.PathEscape(tg.session), "$task", url.PathEscape(tg.task), "$memory", url.PathEscape(memory)).Replace(s)
	}
	task, _ := json.Marshal(tg.task)
	memq, _ := json.Marshal(memory)
	forgotten, _ := json.Marshal(tg.forgotten)
	return strings.NewReplacer("$session", string(sess), "$task", string(task), "$memoryq", string(memq), "$memory", memory, "$ids", string(ids),
		"$forgotten", string(forgotten)).Replace(s)
}

// marker is the secret every stored item of session carries, so an answer
// that leaks the session's data is easy to spot.
func marker(session string) string { return fmt.Sprintf("SECRET<%x>", session) }

// seed stores, for each session, two memories, a conversation turn and a
// task, each carrying marker(session), and returns the targets.
func seed(t testing.TB, store *memory.Store, sessions []string) map[string]target {
	t.Helper()
	ctx := context.Background()
	out := map[string]target{}
	for i, s := range sessions {
		tg := target{session: s}
		for j, text := range []string{"%s likes green tea with %s", "%s keeps the %s in a drawer"} {
			// The second memory is old, so cleanup moves it.
			when := time.Time{}
			if j == 1 {
				when = time.Now().Add(-400 * 24 * time.Hour)
			}
			res, err := store.Remember(ctx, s, fmt.Sprintf(text, marker(s), []string{"honey", "lemon", "mint", "milk"}[(i+j)%4]),
				memory.RememberOptions{Tags: []string{marker(s)}, Time: when})
			if err != nil {
				t.Fatal(err)
			}
			tg.memories = append(tg.memories, res.IDs...)
		}
		// A history: the first memory's earlier text is version 1.
		newText := fmt.Sprintf("%s now likes black tea", marker(s))
		if _, err := store.Update(ctx, tg.memories[0], memory.UpdateOptions{Text: &newText}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.AddTurn(ctx, s, memory.Turn{Role: "user", Text: "my code is " + marker(s)}); err != nil {
			t.Fatal(err)
		}
		gone, err := store.Remember(ctx, s, fmt.Sprintf("%s once said something regrettable", marker(s)), memory.RememberOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Forget(ctx, gone.IDs...); err != nil {
			t.Fatal(err)
		}
		tg.forgotten = gone.IDs
		tg.task = fmt.Sprintf("task-%d", i)
		if _, err := store.StartSessionTask(ctx, s, tg.task, "plan "+marker(s)); err != nil {
			t.Fatal(err)
		}
		out[s] = tg
	}
	return out
}

// snapshot is everything a session holds, as comparable text.
func snapshot(t testing.TB, store *memory.Store, session string) string {
	t.Helper()
	ctx := context.Background()
	var parts []string
	if err := store.Scan(ctx, memory.Eq(memory.FieldSession, session), func(m memory.Memory) error {
		parts = append(parts, fmt.Sprintf("memory %s %q", m.ID, m.Text))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	conv, err := store.Context(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	archived, err := store.Archived(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range archived {
		if m.Session == session {
			parts = append(parts, fmt.Sprintf("archived %s %q", m.ID, m.Text))
		}
	}
	forgotten, err := store.Forgotten(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range forgotten {
		if m.Session == session {
			parts = append(parts, fmt.Sprintf("forgotten %s %q", m.ID, m.Text))
		}
	}
	for _, turn := range conv.Turns {
		parts = append(parts, fmt.Sprintf("turn %q", turn.Text))
	}
	tasks, err := store.Tasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if task.Session == session {
			data, _ := json.Marshal(task)
			parts = append(parts, "task "+string(data))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "\n")
}

// newMemStore is a store over the in-memory backend: the suite opens
// hundreds, and what it tests lies above the storage.
func newMemStore(t testing.TB) *memory.Store {
	t.Helper()
	emb, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := memory.New(context.Background(), memory.NewMemBackend(), memory.Options{Embedder: emb, ForgetRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// suiteServer is a handler over a fresh store with a key file of keys.
type suiteServer struct {
	h       *Handler
	store   *memory.Store
	secrets map[string]string
	url     string
}

func newSuiteServer(t testing.TB, keysFile string, secrets map[string]string) *suiteServer {
	return newSuiteServerOn(t, newMemStore(t), keysFile, secrets)
}

func newSuiteServerOn(t testing.TB, store *memory.Store, keysFile string, secrets map[string]string) *suiteServer {
	t.Helper()
	h, err := New(Options{Store: store, KeysFile: keysFile})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &suiteServer{h: h, store: store, secrets: secrets, url: srv.URL}
}

// send makes the probe's request against tg with secret (none if empty).
func (s *suiteServer) send(t testing.TB, p probe, tg target, secret string) (int, string) {
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
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// suiteCallTool calls an MCP tool as secret and returns whether it failed and
// everything it answered.
func suiteCallTool(t testing.TB, cs *mcp.ClientSession, tool string, args string) (bool, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		return true, err.Error()
	}
	return res.IsError, toolText(res)
}

func connectMCP(t testing.TB, baseURL, secret string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "suite", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: baseURL + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerTransport{secret}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestEveryRouteHasAProbe fails for a route or MCP tool the suite does not
// probe, and for a probe of a route that no longer exists.
func TestEveryRouteHasAProbe(t *testing.T) {
	h, err := New(Options{Store: newStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range h.routes {
		seen[r.Pattern] = true
		if len(routeProbes[r.Pattern]) == 0 {
			t.Errorf("route %q (access %+v) has no probe in routeProbes (server/security_test.go): add what it answers "+
				"for a session in the key's scope (ok) and for another key's session (foreign: 403, 404, or 200 when it filters)", r.Pattern, r.Access)
		}
	}
	for pattern := range routeProbes {
		if !seen[pattern] {
			t.Errorf("routeProbes has %q, which is no route", pattern)
		}
	}
	tools := mcpTools(t, h)
	for _, name := range tools {
		if len(mcpProbes[name]) == 0 {
			t.Errorf("MCP tool %q has no probe in mcpProbes (server/security_test.go)", name)
		}
	}
	for name := range mcpProbes {
		if !slices.Contains(tools, name) {
			t.Errorf("mcpProbes has %q, which is no tool", name)
		}
	}
}

// mcpTools lists the tools the handler's MCP server offers.
func mcpTools(t testing.TB, h *Handler) []string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	cs := connectMCP(t, srv.URL, "")
	defer cs.Close() // before srv.Close, which waits for the session's stream
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// role is a kind of caller in the route matrix.
type role struct {
	name   string
	scope  Scope // nil: no key file entry (none, wrong)
	rights Right
}

var matrixRoles = []role{
	{name: "none"},
	{name: "wrong"},
	{name: "reader", scope: Scope{"alice"}, rights: RightRead},
	{name: "writer", scope: Scope{"alice"}, rights: RightWrite},
	{name: "rw", scope: Scope{"alice"}, rights: RightRead | RightWrite},
	{name: "globrw", scope: Scope{"ali*", "carol"}, rights: RightRead | RightWrite},
	{name: "admin", scope: Scope{"*"}, rights: AllRights},
}

// TestRouteMatrix: every route x every key right and scope, against a
// session in the key's scope (alice) and one outside it (bob). Each
// combination runs on a fresh store, and after each, bob's data is checked
// unchanged when the key may not touch it, and absent from the answer.
func TestRouteMatrix(t *testing.T) {
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	secrets := map[string]string{"wrong": KeyPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}
	for _, r := range matrixRoles {
		if r.scope != nil {
			sec, err := AddKey(keysFile, r.name, r.scope, r.rights)
			if err != nil {
				t.Fatal(err)
			}
			secrets[r.name] = sec
		}
	}
	h, _ := New(Options{Store: newStore(t)})
	roles := matrixRoles
	if testing.Short() {
		// One of each kind of refusal and acceptance (the race run).
		roles = []role{matrixRoles[0], matrixRoles[2], matrixRoles[3], matrixRoles[5], matrixRoles[6]}
	}
	for _, rt := range h.routes {
		for pi, p := range routeProbes[rt.Pattern] {
			if testing.Short() && pi > 0 {
				break
			}
			for _, r := range roles {
				for _, sess := range []string{"alice", "bob"} {
					if p.listing && sess == "bob" {
						continue
					}
					name := fmt.Sprintf("%s#%d/%s/%s", rt.Pattern, pi, r.name, sess)
					store := newMemStore(t)
					if p.disk {
						store = newStore(t)
					}
					s := newSuiteServerOn(t, store, keysFile, secrets)
					targets := seed(t, s.store, []string{"alice", "bob"})
					bobBefore := snapshot(t, s.store, "bob")
					code, body := s.send(t, p, targets[sess], secrets[r.name])
					s.h.jobs.wg.Wait() // a job the request started has finished
					want := expectStatus(rt, p, r, sess)
					if code != want {
						t.Errorf("%s: status %d, want %d (%.200s)", name, code, want, body)
					}
					mayBob := r.scope.Contains("bob") && r.rights != 0
					if !mayBob {
						if strings.Contains(body, marker("bob")) {
							t.Errorf("%s: the answer holds bob's data: %.300s", name, body)
						}
						if after := snapshot(t, s.store, "bob"); after != bobBefore {
							t.Errorf("%s: bob's data changed:\n%s\n->\n%s", name, bobBefore, after)
						}
					}
				}
			}
		}
	}
}

// TestPublicFiles: the files served without a key hold no stored data.
func TestPublicFiles(t *testing.T) {
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	if _, err := AddKey(keysFile, "alice", Scope{"alice"}, RightRead); err != nil {
		t.Fatal(err)
	}
	s := newSuiteServer(t, keysFile, nil)
	seed(t, s.store, []string{"alice"})
	if code, _ := s.send(t, probe{method: "GET", path: "/v1/sessions"}, target{}, ""); code != 401 {
		t.Fatalf("the API without a key: %d", code)
	}
	h, err := New(Options{Store: newMemStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rt := range h.routes {
		if !rt.Access.Public {
			continue
		}
		for _, p := range routeProbes[rt.Pattern] {
			n++
			code, body := s.send(t, p, target{}, "")
			if code != p.ok || strings.Contains(body, "SECRET") {
				t.Errorf("%s %s without a key: %d, %.200s", p.method, p.path, code, body)
			}
		}
	}
	if n < 2 {
		t.Errorf("%d public probes; want the dashboard's page and files", n)
	}
}

// expectStatus is what route rt must answer probe p for role r aimed at
// session sess.
func expectStatus(rt routeInfo, p probe, r role, sess string) int {
	if p.public {
		return p.ok
	}
	if r.scope == nil {
		return 401
	}
	if !r.rights.Has(rt.Access.Right) {
		return 403
	}
	if p.listing || r.scope.Contains(sess) {
		return p.ok
	}
	return p.foreign
}

// TestMCPMatrix: every MCP tool x every key right and scope, like
// TestRouteMatrix.
func TestMCPMatrix(t *testing.T) {
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	secrets := map[string]string{}
	for _, r := range matrixRoles {
		if r.scope != nil {
			sec, err := AddKey(keysFile, r.name, r.scope, r.rights)
			if err != nil {
				t.Fatal(err)
			}
			secrets[r.name] = sec
		}
	}
	for tool, probes := range mcpProbes {
		for pi, p := range probes {
			for _, r := range matrixRoles {
				if r.scope == nil {
					continue // refused before MCP: TestRouteMatrix's /mcp probe
				}
				for _, sess := range []string{"alice", "bob"} {
					name := fmt.Sprintf("%s#%d/%s/%s", tool, pi, r.name, sess)
					s := newSuiteServer(t, keysFile, secrets)
					targets := seed(t, s.store, []string{"alice", "bob"})
					bobBefore := snapshot(t, s.store, "bob")
					cs := connectMCP(t, s.url, secrets[r.name])
					failed, out := suiteCallTool(t, cs, tool, targets[sess].fill(p.args, false))
					wantFail := !r.rights.Has(p.right) || (!p.listing && !r.scope.Contains(sess) && p.foreignIsError)
					if failed != wantFail {
						t.Errorf("%s: failed %v, want %v (%.200s)", name, failed, wantFail, out)
					}
					if !r.scope.Contains("bob") {
						if strings.Contains(out, marker("bob")) {
							t.Errorf("%s: the answer holds bob's data: %.300s", name, out)
						}
						if after := snapshot(t, s.store, "bob"); after != bobBefore {
							t.Errorf("%s: bob's data changed", name)
						}
					}
					cs.Close()
				}
			}
		}
	}
}
