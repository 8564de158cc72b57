package server

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/memory"
)

// TestForgetRestorePurge: over HTTP a forgotten memory is listed in the trash and comes back
// under its ID with its text and metadata; purge deletes for good, from the trash too.
func TestForgetRestorePurge(t *testing.T) {
	s := newTestServer(t, Options{})
	var rem struct{ IDs []string }
	if code := s.do("POST", "/v1/remember", map[string]any{"session": "alice", "text": "alice parks on level 3",
		"tags": []string{"car"}, "metadata": map[string]any{"level": 3}}, &rem); code != 200 || len(rem.IDs) != 1 {
		t.Fatalf("remember: %d %v", code, rem)
	}
	id := rem.IDs[0]
	var before struct{ MemoryJSON }
	if code := s.do("GET", "/v1/memories/"+id, nil, &before); code != 200 {
		t.Fatalf("get: %d", code)
	}
	var forgot ForgetResponse
	if code := s.do("POST", "/v1/forget", ForgetRequest{IDs: []string{id}}, &forgot); code != 200 || forgot.Forgotten != 1 || !forgot.Restorable || forgot.PurgeAfter.IsZero() {
		t.Fatalf("forget: %d %+v", code, forgot)
	}
	if code := s.do("GET", "/v1/memories/"+id, nil, nil); code != 404 {
		t.Fatalf("get after forget: %d", code)
	}
	var trash struct{ Memories []ForgottenJSON }
	if code := s.do("GET", "/v1/forgotten?session=alice", nil, &trash); code != 200 || len(trash.Memories) != 1 || trash.Memories[0].ID != id || trash.Memories[0].Forgotten.IsZero() {
		t.Fatalf("forgotten: %d %+v", code, trash)
	}
	var restored map[string]int
	if code := s.do("POST", "/v1/restore", RestoreForgottenRequest{IDs: []string{id, "ghost"}}, nil); code != 404 {
		t.Fatalf("restore of an unknown ID: %d", code)
	}
	if code := s.do("POST", "/v1/restore", RestoreForgottenRequest{IDs: []string{id}}, &restored); code != 200 || restored["restored"] != 1 {
		t.Fatalf("restore: %d %v", code, restored)
	}
	var after struct{ MemoryJSON }
	if code := s.do("GET", "/v1/memories/"+id, nil, &after); code != 200 || after.Text != before.Text ||
		!slices.Equal(after.Tags, before.Tags) || after.Metadata["level"] != 3.0 || !after.Created.Equal(before.Created) {
		t.Fatalf("restored %d %+v, want %+v", code, after, before)
	}
	// Forget, then purge what is only in the trash: gone for good.
	s.do("POST", "/v1/forget", ForgetRequest{IDs: []string{id}}, nil)
	if code := s.do("POST", "/v1/forget", ForgetRequest{IDs: []string{id}, Purge: true}, &forgot); code != 200 || forgot.Forgotten != 1 || forgot.Restorable {
		t.Fatalf("purge: %d %+v", code, forgot)
	}
	if code := s.do("POST", "/v1/restore", RestoreForgottenRequest{IDs: []string{id}}, nil); code != 404 {
		t.Fatalf("restore after purge: %d", code)
	}
	if code := s.do("GET", "/v1/memories/"+id+"/history", nil, nil); code != 404 {
		t.Fatalf("history after purge: %d", code)
	}
	// Emptying the trash.
	s.do("POST", "/v1/remember", map[string]any{"session": "bob", "text": "bob's note"}, &rem)
	s.do("POST", "/v1/forget", ForgetRequest{IDs: rem.IDs}, nil)
	var purged map[string]int
	if code := s.do("POST", "/v1/admin/forgotten/purge", `{}`, &purged); code != 200 || purged["purged"] != 1 {
		t.Fatalf("empty the trash: %d %v", code, purged)
	}
	var st memory.Stats
	if code := s.do("GET", "/v1/stats", nil, &st); code != 200 || st.Forgotten != 0 || st.Memories != 0 {
		t.Fatalf("stats: %d %+v", code, st)
	}
}

// TestMCPForgetRestore: the MCP forget tool says the memory is restorable, restore brings the
// same ID back, and purge deletes for good.
func TestMCPForgetRestore(t *testing.T) {
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
	call := func(name string, args map[string]any, out any) bool {
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
		return !res.IsError
	}
	var rem MCPRememberOutput
	call("remember", map[string]any{"session": "alice", "text": "Alice's cat is called Miso."}, &rem)
	id := rem.IDs[0]
	var forgot MCPForgetOutput
	if !call("forget", map[string]any{"ids": []string{id}}, &forgot) || forgot.Forgotten != 1 || !forgot.Restorable {
		t.Fatalf("forget: %+v", forgot)
	}
	if call("get", map[string]any{"id": id}, nil) {
		t.Fatal("get after forget succeeded")
	}
	var restored MCPRestoreOutput
	if !call("restore", map[string]any{"ids": []string{id}}, &restored) || restored.Restored != 1 {
		t.Fatalf("restore: %+v", restored)
	}
	var m memory.MemoryJSON
	if !call("get", map[string]any{"id": id}, &m) || m.Text != "Alice's cat is called Miso." {
		t.Fatalf("get after restore: %+v", m)
	}
	if !call("forget", map[string]any{"ids": []string{id}, "purge": true}, &forgot) || !forgot.Purged || forgot.Restorable {
		t.Fatalf("purge: %+v", forgot)
	}
	if call("restore", map[string]any{"ids": []string{id}}, nil) {
		t.Fatal("restore after purge succeeded")
	}
}
