package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

// TestMemoryRoutes walks get, list (filters, pages), update, history, revert, delete, export,
// cleanup and the recall and forget filters over HTTP.
func TestMemoryRoutes(t *testing.T) {
	s := newTestServer(t, Options{})
	var a, b RememberResponse
	s.do("POST", "/v1/remember", RememberRequest{Session: "alice", Text: "Alice drinks green tea every morning.", Tags: []string{"drinks"},
		Metadata: map[string]any{"confidence": 0.9, "origin": "chat"}}, &a)
	s.do("POST", "/v1/remember", RememberRequest{Session: "alice", Text: "Alice's sister lives in Porto.", Tags: []string{"family"}}, &b)
	s.do("POST", "/v1/remember", RememberRequest{Session: "bob", Text: "Bob drinks black coffee."}, nil)
	id := a.IDs[0]

	var m memory.MemoryJSON
	if code := s.do("GET", "/v1/memories/"+id, nil, &m); code != 200 || m.Text != "Alice drinks green tea every morning." ||
		m.Metadata["origin"] != "chat" || m.LastAccess != nil || len(m.Vector) != 0 {
		t.Fatalf("get: %d %+v", code, m)
	}
	var e struct{ Error string }
	if code := s.do("GET", "/v1/memories/nope", nil, &e); code != 404 || !strings.Contains(e.Error, `"nope"`) {
		t.Fatalf("get unknown: %d %q", code, e.Error)
	}

	// List: one page at a time, newest first, filters by query parameters.
	var page ListResponse
	if code := s.do("GET", "/v1/memories?session=alice&limit=1", nil, &page); code != 200 || len(page.Memories) != 1 || page.NextCursor == "" {
		t.Fatalf("list page 1: %d %+v", code, page)
	}
	first := page.Memories[0].ID
	next := page.NextCursor
	page = ListResponse{}
	if code := s.do("GET", "/v1/memories?session=alice&limit=1&cursor="+next, nil, &page); code != 200 || len(page.Memories) != 1 || page.NextCursor != "" || page.Memories[0].ID == first {
		t.Fatalf("list page 2: %d %+v", code, page)
	}
	for q, want := range map[string]int{
		"":            3,
		"tag=drinks":  1,
		"session=bob": 1,
		"where=" + url.QueryEscape(`{"metadata.confidence": {"range": {"gte": 0.5}}}`): 1,
		"where=" + url.QueryEscape(`{"tags": {"exists": false}}`):                      1,
		"since=2000-01-01T00:00:00Z&until=2200-01-01T00:00:00Z":                        3,
		"since=2200-01-01T00:00:00Z":                                                   0,
	} {
		page = ListResponse{}
		if code := s.do("GET", "/v1/memories?"+q, nil, &page); code != 200 || len(page.Memories) != want {
			t.Errorf("list ?%s: %d, %d memories, want %d", q, code, len(page.Memories), want)
		}
	}
	for _, q := range []string{"where=" + url.QueryEscape(`{"colour": "red"}`), "limit=0", "limit=x", "cursor=zzz", "since=yesterday", "sesion=alice"} {
		if code := s.do("GET", "/v1/memories?"+q, nil, &e); code != 400 || e.Error == "" {
			t.Errorf("list ?%s: %d %q, want 400", q, code, e.Error)
		}
	}

	// Update re-embeds; history keeps the version; revert brings it back.
	text := "Alice drinks oolong tea every morning."
	if code := s.do("PATCH", "/v1/memories/"+id, UpdateRequest{Text: &text}, &m); code != 200 || m.Text != text {
		t.Fatalf("update: %d %+v", code, m)
	}
	if code := s.do("PATCH", "/v1/memories/"+id, `{"txt": "typo"}`, &e); code != 400 {
		t.Fatalf("update with an unknown field: %d", code)
	}
	if code := s.do("PATCH", "/v1/memories/nope", UpdateRequest{Text: &text}, nil); code != 404 {
		t.Fatalf("update unknown: %d", code)
	}
	var rec RecallResponse
	s.do("POST", "/v1/recall", RecallRequest{Query: "oolong", Session: "alice", Mode: "keyword"}, &rec)
	if len(rec.Results) != 1 || rec.Results[0].ID != id {
		t.Fatalf("recall of the updated text: %+v", rec)
	}
	var hist HistoryResponse
	if code := s.do("GET", "/v1/memories/"+id+"/history", nil, &hist); code != 200 || len(hist.Versions) != 1 ||
		hist.Versions[0].Change != memory.ChangeUpdate || hist.Versions[0].Memory.Text != "Alice drinks green tea every morning." || hist.Versions[0].Version != 1 {
		t.Fatalf("history: %d %+v", code, hist)
	}
	if code := s.do("POST", "/v1/memories/"+id+"/revert", map[string]int{"version": 1}, &m); code != 200 || m.Text != "Alice drinks green tea every morning." {
		t.Fatalf("revert: %d %+v", code, m)
	}
	if code := s.do("POST", "/v1/memories/"+id+"/revert", map[string]int{"version": 7}, nil); code != 404 {
		t.Fatalf("revert to a missing version: %d", code)
	}

	// Recall with a filter; an empty session says so.
	s.do("POST", "/v1/recall", RecallRequest{Query: "drinks tea", Session: "alice", Filter: memory.Eq(memory.FieldTag, "family")}, &rec)
	for _, r := range rec.Results {
		if !slices.Contains(r.Tags, "family") {
			t.Fatalf("recall filter let through %+v", r)
		}
	}
	var raw map[string]any
	if code := s.do("POST", "/v1/recall", `{"query": "tea", "session": "nobody"}`, &raw); code != 200 || raw["session_empty"] != true {
		t.Fatalf("recall on an empty session: %d %v", code, raw)
	}
	raw = nil
	if code := s.do("POST", "/v1/recall", `{"query": "xylophone", "session": "alice", "min_score": 0.5}`, &raw); code != 200 || raw["session_empty"] != nil {
		t.Fatalf("recall without a match: %d %v", code, raw)
	}
	if code := s.do("POST", "/v1/recall", `{"query": "tea", "session": "alice", "filter": {"tags": {"like": "x"}}}`, &e); code != 400 || !strings.Contains(e.Error, "unknown operator") {
		t.Fatalf("recall with a bad filter: %d %q", code, e.Error)
	}

	// Export: the versioned format, filtered.
	resp := post(t, s, "/v1/export", `{"filter": {"session": "alice"}}`)
	h, ms, err := memory.ReadExport(resp.Body)
	resp.Body.Close()
	if err != nil || h.Version != memory.ExportVersion || len(ms) != 2 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export: %+v, %d memories, %v", h, len(ms), err)
	}

	// Forget: unknown IDs change nothing and are named; a filter forgets what it matches.
	if code := s.do("POST", "/v1/forget", ForgetRequest{IDs: []string{id, "ghost"}}, &e); code != 404 || !strings.Contains(e.Error, "ghost") || s.count() != 3 {
		t.Fatalf("forget with an unknown ID: %d %q, %d left", code, e.Error, s.count())
	}
	var forgot ForgetResponse
	if code := s.do("POST", "/v1/forget", `{"filter": {"tags": "family"}, "session": "alice"}`, &forgot); code != 200 || forgot.Forgotten != 1 {
		t.Fatalf("forget by filter: %d %v", code, forgot)
	}
	var cl CleanupResult
	if code := s.do("POST", "/v1/cleanup", CleanupRequest{DryRun: true, OlderThan: "1ns", Filter: memory.Eq(memory.FieldSession, "bob")}, &cl); code != 200 ||
		len(cl.Memories) != 1 || cl.Memories[0].Session != "bob" || !cl.DryRun || s.count() != 2 {
		t.Fatalf("cleanup dry run: %d %+v", code, cl)
	}
	if code := s.do("DELETE", "/v1/memories/"+id, nil, nil); code != 200 || s.count() != 1 {
		t.Fatalf("delete: %d", code)
	}
	if code := s.do("DELETE", "/v1/memories/"+id, nil, &e); code != 404 || !strings.Contains(e.Error, id) {
		t.Fatalf("delete twice: %d", code)
	}
	if code := s.do("GET", "/v1/memories/"+id+"/history", nil, nil); code != 404 {
		t.Fatalf("history of a deleted memory: %d", code)
	}
}

func post(t *testing.T, s *testServer, path, body string) *http.Response {
	req, _ := http.NewRequest("POST", s.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	return resp
}

// TestMemoryRoutesScopes: a key sees and changes only memories of its sessions through the
// memory routes; others look missing.
func TestMemoryRoutesScopes(t *testing.T) {
	s, sec, _ := keyedServer(t, map[string]keySpec{
		"admin":  {Scope{"*"}, AllRights},
		"alice":  {Scope{"alice"}, RightRead | RightWrite},
		"reader": {Scope{"alice"}, RightRead},
	})
	admin, alice, reader := s.as(sec["admin"]), s.as(sec["alice"]), s.as(sec["reader"])
	ids := map[string]string{}
	for _, sess := range []string{"alice", "bob"} {
		var rem RememberResponse
		admin.do("POST", "/v1/remember", RememberRequest{Session: sess, Text: sess + " likes green tea"}, &rem)
		ids[sess] = rem.IDs[0]
	}
	text := "changed"
	for _, tc := range []struct {
		c            *testServer
		method, path string
		body         any
		want         int
	}{
		{alice, "GET", "/v1/memories/" + ids["alice"], nil, 200},
		{alice, "GET", "/v1/memories/" + ids["bob"], nil, 404},
		{alice, "GET", "/v1/memories/" + ids["bob"] + "/history", nil, 404},
		{alice, "PATCH", "/v1/memories/" + ids["bob"], UpdateRequest{Text: &text}, 404},
		{alice, "DELETE", "/v1/memories/" + ids["bob"], nil, 404},
		{alice, "POST", "/v1/memories/" + ids["bob"] + "/revert", map[string]int{"version": 1}, 404},
		{alice, "GET", "/v1/memories?session=bob", nil, 403},
		{reader, "PATCH", "/v1/memories/" + ids["alice"], UpdateRequest{Text: &text}, 403},
		{reader, "DELETE", "/v1/memories/" + ids["alice"], nil, 403},
		{reader, "POST", "/v1/cleanup", CleanupRequest{DryRun: true}, 403},
		{reader, "GET", "/v1/memories/" + ids["alice"] + "/history", nil, 200},
		{alice, "POST", "/v1/forget", map[string]any{"filter": map[string]string{"session": "bob"}, "session": "bob"}, 403},
	} {
		if code := tc.c.do(tc.method, tc.path, tc.body, nil); code != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, code, tc.want)
		}
	}
	var page ListResponse
	if code := alice.do("GET", "/v1/memories", nil, &page); code != 200 || len(page.Memories) != 1 || page.Memories[0].Session != "alice" {
		t.Fatalf("alice lists: %d %+v", code, page)
	}
	// A filter naming bob's session within alice's scope finds nothing, forgets nothing.
	var forgot ForgetResponse
	if code := alice.do("POST", "/v1/forget", map[string]any{"filter": map[string]string{"session": "bob"}}, &forgot); code != 200 || forgot.Forgotten != 0 {
		t.Fatalf("alice forgets by a filter on bob: %d %v", code, forgot)
	}
	resp := post(t, alice, "/v1/export", `{}`)
	_, ms, err := memory.ReadExport(resp.Body)
	resp.Body.Close()
	if err != nil || len(ms) != 1 || ms[0].Session != "alice" {
		t.Fatalf("alice exports: %d, %v", len(ms), err)
	}
	var cl CleanupResult
	if code := alice.do("POST", "/v1/cleanup", CleanupRequest{DryRun: true, OlderThan: "1ns"}, &cl); code != 200 || len(cl.Memories) != 1 || cl.Memories[0].Session != "alice" {
		t.Fatalf("alice cleanup: %d %+v", code, cl)
	}
	if ms, _ := s.store.Get(t.Context(), ids["bob"]); len(ms) != 1 || ms[0].Text != "bob likes green tea" {
		t.Fatal("bob's memory changed")
	}
}

// TestOpenAPICoversEveryRoute: every registered route has its path and method in openapi.json,
// and every JSON key the handlers write for a memory is snake_case.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	h, err := New(Options{Store: newStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range h.routes {
		method, path, ok := strings.Cut(r.Pattern, " ")
		if !ok {
			method, path = "", r.Pattern
		}
		// Every route, the dashboard's files included: "/{$}" is "/", and
		// the subtree "/ui/" its files "/ui/{file}".
		path = strings.TrimSuffix(path, "{$}")
		if strings.HasSuffix(path, "/") && path != "/" {
			path += "{file}"
		}
		ops, ok := doc.Paths[path]
		if !ok {
			t.Errorf("openapi.json lacks %s", path)
			continue
		}
		if method != "" {
			if _, ok := ops[strings.ToLower(method)]; !ok {
				t.Errorf("openapi.json lacks %s %s", method, path)
			}
		}
	}
	b, _ := json.Marshal(memory.ResultJSON{MemoryJSON: memory.MemoryJSON{Tags: []string{"x"}, Source: "s", Metadata: map[string]any{"k": 1}, Vector: []float32{1}}})
	var keys map[string]any
	json.Unmarshal(b, &keys)
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	for k := range keys {
		if !snake.MatchString(k) {
			t.Errorf("memory JSON key %q is not snake_case", k)
		}
	}
	for k := range keys["score"].(map[string]any) {
		if !snake.MatchString(k) {
			t.Errorf("score key %q is not snake_case", k)
		}
	}
	b, _ = json.Marshal(memory.Stats{})
	keys = nil
	json.Unmarshal(b, &keys)
	for k := range keys {
		if !snake.MatchString(k) {
			t.Errorf("stats key %q is not snake_case", k)
		}
	}
}
