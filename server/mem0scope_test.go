package server

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/memory"
)

// TestScopesOverHTTPAndMCP: mem0's user_id, agent_id and run_id over HTTP and MCP select exactly
// their memories (the quoted bug: a search with user_id alex and run_id other-run found what was
// added under run trip-42), a conversation remembered with infer keeps the user's statement in
// its scope, and forget of a run leaves the rest.
func TestScopesOverHTTPAndMCP(t *testing.T) {
	s := newTestServer(t, Options{Token: "tok"})
	cs := connectMCP(t, s.url, "tok")
	text := "I am flying to Lisbon on Friday."
	ids := map[string]string{}
	for name, body := range map[string]map[string]any{
		"trip":  {"user_id": "alex", "run_id": "trip-42", "text": text},
		"other": {"user_id": "alex", "run_id": "other-run", "text": text},
		"agent": {"user_id": "alex", "agent_id": "planner", "text": text},
		"alone": {"agent_id": "planner", "run_id": "trip-42", "text": text},
	} {
		var r RememberResponse
		if code := s.do("POST", "/v1/remember", body, &r); code != 200 || len(r.IDs) != 1 || r.Merged[0] {
			t.Fatalf("remember %s: %d %+v", name, code, r)
		}
		ids[name] = r.IDs[0]
	}
	want := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, ids[n])
		}
		slices.Sort(out)
		return out
	}
	recalled := func(rs []RecallResult) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		scope map[string]any
		want  []string
	}{
		{map[string]any{"user_id": "alex", "run_id": "other-run"}, want("other")},
		{map[string]any{"user_id": "alex", "run_id": "trip-42"}, want("trip")},
		{map[string]any{"user_id": "alex", "agent_id": "planner"}, want("agent")},
		{map[string]any{"user_id": "alex"}, want("trip", "other", "agent")},
		{map[string]any{"agent_id": "planner"}, want("alone")},
		{map[string]any{"agent_id": "planner", "run_id": "other-run"}, nil},
		{map[string]any{"run_id": "trip-42"}, nil},
	} {
		body := map[string]any{"query": "Lisbon", "k": 10, "no_touch": true}
		for k, v := range tc.scope {
			body[k] = v
		}
		var r RecallResponse
		if code := s.do("POST", "/v1/recall", body, &r); code != 200 || !slices.Equal(recalled(r.Results), tc.want) {
			t.Errorf("HTTP recall %v: %d %v, want %v", tc.scope, code, recalled(r.Results), tc.want)
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "recall", Arguments: body})
		if err != nil || res.IsError {
			t.Fatalf("MCP recall %v: %v %v", tc.scope, err, res)
		}
		var m RecallResponse
		b, _ := json.Marshal(res.StructuredContent)
		if json.Unmarshal(b, &m); !slices.Equal(recalled(m.Results), tc.want) {
			t.Errorf("MCP recall %v: %v, want %v", tc.scope, recalled(m.Results), tc.want)
		}
		q := "/v1/memories?"
		for k, v := range tc.scope {
			q += k + "=" + v.(string) + "&"
		}
		var page ListResponse
		var listed []string
		s.do("GET", q, nil, &page)
		for _, m := range page.Memories {
			listed = append(listed, m.ID)
		}
		slices.Sort(listed)
		if !slices.Equal(listed, tc.want) {
			t.Errorf("HTTP list %v: %v, want %v", tc.scope, listed, tc.want)
		}
	}
	var bad map[string]string
	if code := s.do("POST", "/v1/recall", map[string]any{"session": "bob", "user_id": "alex", "query": "x"}, &bad); code != 400 {
		t.Errorf("a session and a user that differ: %d %v", code, bad)
	}

	// A conversation through the MCP tool: what the user states, in the run.
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "remember", Arguments: map[string]any{
		"user_id": "alex", "run_id": "trip-42", "infer": true,
		"messages": []map[string]any{{"role": "user", "text": "ok cool. I'm allergic to shellfish."}, {"role": "assistant", "text": "Noted, I'll remember that."}}}})
	if err != nil || res.IsError {
		t.Fatalf("MCP remember messages: %v %v", err, res)
	}
	var d memory.DistillResult
	b, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(b, &d); d.Turns != 2 || len(d.Events) != 1 || d.Events[0].Text != "I'm allergic to shellfish." {
		t.Fatalf("MCP remember messages: %s", b)
	}
	var got memory.MemoryJSON
	if s.do("GET", "/v1/memories/"+d.Events[0].ID, nil, &got); got.Session != "alex" || got.Metadata[memory.MetaRunID] != "trip-42" {
		t.Fatalf("distilled memory %+v", got)
	}

	// Forget run trip-42 of alex through MCP: its two memories go, the rest stay.
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forget", Arguments: map[string]any{"user_id": "alex", "run_id": "trip-42", "all": true}})
	b, _ = json.Marshal(res.StructuredContent)
	var f ForgetResponse
	if json.Unmarshal(b, &f); err != nil || res.IsError || f.Forgotten != 2 {
		t.Fatalf("MCP forget run trip-42: %v %s", err, b)
	}
	var page ListResponse
	s.do("GET", "/v1/memories?user_id=alex", nil, &page)
	if len(page.Memories) != 2 {
		t.Fatalf("after forgetting run trip-42, alex has %d memories", len(page.Memories))
	}
}
