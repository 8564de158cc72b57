package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/memory"
)

// TestMCPMemoryTools: get, list (filter, pages), update, history, delete, and recall and
// forget with a filter, over an in-memory MCP transport.
func TestMCPMemoryTools(t *testing.T) {
	ctx := context.Background()
	server := NewMCP(newStore(t))
	ct, st := mcp.NewInMemoryTransports()
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
	call := func(name string, args map[string]any, out any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out != nil {
			if res.IsError {
				t.Fatalf("%s: %s", name, res.Content[0].(*mcp.TextContent).Text)
			}
			data, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(data, out); err != nil {
				t.Fatalf("%s: structured content %s: %v", name, data, err)
			}
		}
		return res
	}
	var rem MCPRememberOutput
	call("remember", map[string]any{"session": "alice", "text": "Alice's cat is called Miso.", "tags": []string{"pets"}, "metadata": map[string]any{"since": 2019}}, &rem)
	call("remember", map[string]any{"session": "alice", "text": "Alice works at the harbour office."}, nil)
	id := rem.IDs[0]
	var m memory.MemoryJSON
	if call("get", map[string]any{"id": id}, &m); m.Text != "Alice's cat is called Miso." || m.Metadata["since"] != 2019.0 {
		t.Fatalf("get: %+v", m)
	}
	if res := call("get", map[string]any{"id": "nope"}, nil); !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "nope") {
		t.Fatal("get of an unknown ID did not fail naming it")
	}
	var list MCPListOutput
	if call("list", map[string]any{"session": "alice", "filter": map[string]any{"tags": "pets"}}, &list); len(list.Memories) != 1 || list.Memories[0].ID != id {
		t.Fatalf("list with a filter: %+v", list)
	}
	if call("list", map[string]any{"session": "alice", "limit": 1}, &list); len(list.Memories) != 1 || list.NextCursor == "" {
		t.Fatalf("list page: %+v", list)
	}
	if res := call("list", map[string]any{"session": "alice", "filter": map[string]any{"tagz": "pets"}}, nil); !res.IsError {
		t.Fatal("a bad filter was accepted")
	}
	if call("update", map[string]any{"id": id, "text": "Alice's cat is called Mochi."}, &m); m.Text != "Alice's cat is called Mochi." {
		t.Fatalf("update: %+v", m)
	}
	var hist MCPHistoryOutput
	if call("history", map[string]any{"id": id}, &hist); len(hist.Versions) != 1 || hist.Versions[0].Memory.Text != "Alice's cat is called Miso." || hist.Versions[0].Change != memory.ChangeUpdate {
		t.Fatalf("history: %+v", hist)
	}
	var rec MCPRecallOutput
	if call("recall", map[string]any{"session": "alice", "query": "cat harbour", "filter": map[string]any{"tags": "pets"}}, &rec); len(rec.Results) != 1 || rec.Results[0].ID != id || rec.Results[0].Score.Final <= 0 {
		t.Fatalf("recall with a filter: %+v", rec)
	}
	if call("recall", map[string]any{"session": "nobody", "query": "cat"}, &rec); !rec.SessionEmpty {
		t.Fatalf("recall on an empty session: %+v", rec)
	}
	var fg MCPForgetOutput
	if res := call("forget", map[string]any{"ids": []string{id, "ghost"}}, nil); !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "ghost") {
		t.Fatal("forget with an unknown ID did not fail naming it")
	}
	if call("forget", map[string]any{"session": "alice", "filter": map[string]any{"tags": map[string]any{"exists": false}}}, &fg); fg.Forgotten != 1 {
		t.Fatalf("forget by filter: %+v", fg)
	}
	var del MCPDeleteOutput
	if call("delete", map[string]any{"id": id}, &del); del.Deleted != id {
		t.Fatalf("delete: %+v", del)
	}
	if res := call("history", map[string]any{"id": id}, nil); !res.IsError {
		t.Fatal("history of a deleted memory")
	}
}
