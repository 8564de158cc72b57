package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// TestMCPContextAndTasks drives short-term and working memory through MCP: turns, context,
// clear; a task's start, steps with JSON results, finish, list and delete.
func TestMCPContextAndTasks(t *testing.T) {
	server := NewMCP(newStore(t))
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res := callTool(t, cs, "context", map[string]any{"session": "alice"}); res.IsError || !strings.Contains(toolText(res), `"turns":[]`) {
		t.Fatalf("empty context: %s", toolText(res))
	}
	callTool(t, cs, "add_turn", map[string]any{"session": "alice", "role": "user", "text": "My flight is on 3 May."})
	res := callTool(t, cs, "context", map[string]any{"session": "alice"})
	if res.IsError || !strings.Contains(toolText(res), "3 May") {
		t.Fatalf("context: %s", toolText(res))
	}
	if res := callTool(t, cs, "context", map[string]any{"session": "bob"}); strings.Contains(toolText(res), "3 May") {
		t.Fatal("bob sees alice's conversation")
	}
	if res := callTool(t, cs, "add_turn", map[string]any{"session": "alice", "role": "user", "text": "  "}); !res.IsError {
		t.Fatal("a blank turn was taken")
	}
	callTool(t, cs, "clear_context", map[string]any{"session": "alice"})
	if res := callTool(t, cs, "context", map[string]any{"session": "alice"}); strings.Contains(toolText(res), "3 May") {
		t.Fatal("clear_context left the turn")
	}

	if res := callTool(t, cs, "start_task", map[string]any{"id": "trip", "goal": "plan the trip", "session": "alice"}); res.IsError {
		t.Fatalf("start_task: %s", toolText(res))
	}
	res = callTool(t, cs, "update_step", map[string]any{"id": "trip", "name": "book", "status": "done", "result": map[string]any{"seat": "12A"}, "next": "pack"})
	if res.IsError {
		t.Fatalf("update_step: %s", toolText(res))
	}
	var task struct {
		Next  string `json:"next"`
		Steps []struct {
			Name   string          `json:"name"`
			Result json.RawMessage `json:"result"`
		} `json:"steps"`
	}
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &task); err != nil || task.Next != "pack" || len(task.Steps) != 1 || string(task.Steps[0].Result) != `{"seat":"12A"}` {
		t.Fatalf("task after a step: %s, %v", data, err)
	}
	if res := callTool(t, cs, "update_step", map[string]any{"id": "trip", "name": "x", "status": "bogus"}); !res.IsError {
		t.Fatal("an unknown step status was taken")
	}
	if res := callTool(t, cs, "tasks", map[string]any{}); !strings.Contains(toolText(res), `"trip"`) {
		t.Fatalf("tasks: %s", toolText(res))
	}
	if res := callTool(t, cs, "finish_task", map[string]any{"id": "trip"}); !strings.Contains(toolText(res), `"status":"done"`) {
		t.Fatalf("finish_task: %s", toolText(res))
	}
	callTool(t, cs, "delete_task", map[string]any{"id": "trip"})
	if res := callTool(t, cs, "task", map[string]any{"id": "trip"}); !res.IsError {
		t.Fatal("a deleted task is still there")
	}
}

// TestMCPContextScopes: a key reaches only its sessions' conversations and tasks, and a read key
// cannot write them.
func TestMCPContextScopes(t *testing.T) {
	s, sec, _ := keyedServer(t, map[string]keySpec{
		"admin":  {Scope{"*"}, AllRights},
		"alice":  {Scope{"alice"}, RightRead | RightWrite},
		"reader": {Scope{"alice"}, RightRead},
	})
	admin := mcpAs(t, s, sec["admin"])
	callTool(t, admin, "add_turn", map[string]any{"session": "bob", "role": "user", "text": "Bob's PIN is 1234"})
	callTool(t, admin, "start_task", map[string]any{"id": "bobs", "goal": "bob's secret plan 1234", "session": "bob"})
	alice := mcpAs(t, s, sec["alice"])
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"context", map[string]any{"session": "bob"}},
		{"add_turn", map[string]any{"session": "bob", "role": "user", "text": "planted"}},
		{"clear_context", map[string]any{"session": "bob"}},
		{"task", map[string]any{"id": "bobs"}},
		{"update_step", map[string]any{"id": "bobs", "name": "x"}},
		{"finish_task", map[string]any{"id": "bobs"}},
		{"delete_task", map[string]any{"id": "bobs"}},
		{"start_task", map[string]any{"goal": "x", "session": "bob"}},
	} {
		if res := callTool(t, alice, c.tool, c.args); !res.IsError || strings.Contains(toolText(res), "1234") {
			t.Fatalf("alice's %s on bob's data: %s", c.tool, toolText(res))
		}
	}
	if res := callTool(t, alice, "tasks", map[string]any{}); strings.Contains(toolText(res), "bobs") {
		t.Fatalf("alice lists bob's task: %s", toolText(res))
	}
	if res := callTool(t, alice, "add_turn", map[string]any{"session": "alice", "role": "user", "text": "hi"}); res.IsError {
		t.Fatalf("alice's own turn: %s", toolText(res))
	}
	reader := mcpAs(t, s, sec["reader"])
	if res := callTool(t, reader, "context", map[string]any{"session": "alice"}); res.IsError || !strings.Contains(toolText(res), "hi") {
		t.Fatalf("reader's context: %s", toolText(res))
	}
	if res := callTool(t, reader, "add_turn", map[string]any{"session": "alice", "role": "user", "text": "x"}); !res.IsError {
		t.Fatal("a read-only key added a turn")
	}
	if res := callTool(t, admin, "context", map[string]any{"session": "bob"}); !strings.Contains(toolText(res), "1234") {
		t.Fatalf("bob's conversation changed: %s", toolText(res))
	}
	if res := callTool(t, admin, "task", map[string]any{"id": "bobs"}); res.IsError {
		t.Fatalf("bob's task is gone: %s", toolText(res))
	}
}

// TestHTTPEmptyContext: an empty session's context has "turns": [] (was null).
func TestHTTPEmptyContext(t *testing.T) {
	s := newTestServer(t, Options{})
	var raw json.RawMessage
	if code := s.do("GET", "/v1/sessions/nobody/context", nil, &raw); code != 200 || !strings.Contains(string(raw), `"turns":[]`) {
		t.Fatalf("%d %s", code, raw)
	}
}
