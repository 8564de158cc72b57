package server

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpRoundTrip lists the tools, remembers two memories in two sessions,
// recalls within one, forgets, and checks every answer.
func mcpRoundTrip(t *testing.T, cs *mcp.ClientSession) {
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	for _, want := range []string{"delete", "forget", "get", "history", "list", "recall", "remember", "update",
		"context", "add_turn", "clear_context", "tasks", "task", "start_task", "update_step", "finish_task", "delete_task"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools = %v, no %s", names, want)
		}
	}
	call := func(name string, args map[string]any, out any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out != nil && !res.IsError {
			data, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(data, out); err != nil {
				t.Fatalf("%s: structured content %s: %v", name, data, err)
			}
		}
		return res
	}
	var rem MCPRememberOutput
	call("remember", map[string]any{"session": "alice", "text": "Alice's cat is called Miso."}, &rem)
	call("remember", map[string]any{"session": "bob", "text": "Bob's cat is called Tofu."}, nil)
	if len(rem.IDs) != 1 {
		t.Fatalf("remember = %+v", rem)
	}
	var rec MCPRecallOutput
	res := call("recall", map[string]any{"session": "alice", "query": "cat name"}, &rec)
	if len(rec.Results) != 1 || rec.Results[0].ID != rem.IDs[0] || !strings.Contains(rec.Results[0].Text, "Miso") {
		t.Fatalf("recall = %+v", rec)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "Miso") || strings.Contains(text, "Tofu") {
		t.Fatalf("recall text = %q", text)
	}
	if res := call("remember", map[string]any{"session": "alice", "text": "   "}, nil); !res.IsError {
		t.Fatal("remembering whitespace succeeded")
	}
	var fg MCPForgetOutput
	call("forget", map[string]any{"ids": rem.IDs}, &fg)
	if fg.Forgotten != 1 {
		t.Fatalf("forget = %+v", fg)
	}
	call("recall", map[string]any{"session": "alice", "query": "cat name"}, &rec)
	if len(rec.Results) != 0 {
		t.Fatalf("recall after forget = %+v", rec)
	}
}

func TestMCPOverStreamableHTTP(t *testing.T) {
	s := newTestServer(t, Options{})
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mcpRoundTrip(t, cs)
}

func TestMCPInMemory(t *testing.T) {
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
	mcpRoundTrip(t, cs)
}
