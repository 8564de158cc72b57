package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioMCP runs `memctl mcp` in-process on dir with extra flags, its stdin
// and stdout joined to the official MCP client over pipes, and returns the
// client's session. At cleanup the client hangs up and memctl must exit 0.
func stdioMCP(t *testing.T, dir string, extra ...string) *mcp.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()   // client -> memctl's stdin
	outR, outW := io.Pipe() // memctl's stdout -> client
	var logs syncBuffer
	done := make(chan int, 1)
	args := append([]string{"--dir", dir, "mcp"}, extra...)
	go func() {
		done <- run(context.Background(), args, inR, outW, &logs)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		inW.Close()
		t.Fatalf("connecting to memctl mcp: %v (exit %d: %s)", err, <-done, logs.String())
	}
	t.Cleanup(func() {
		cs.Close()
		inW.Close()
		if code := <-done; code != exitOK {
			t.Errorf("memctl mcp exited %d: %s", code, logs.String())
		}
	})
	return cs
}

// mcpCall calls tool and returns its structured content (JSON) or its error text.
func mcpCall(t *testing.T, cs *mcp.ClientSession, tool string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		var msg strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				msg.WriteString(tc.Text)
			}
		}
		return msg.String(), false
	}
	data, _ := json.Marshal(res.StructuredContent)
	return string(data), true
}

// memctl mcp on a store that `memctl serve` holds speaks MCP through that
// server, as the other commands do, instead of exiting 3 (locked): what it
// remembers lands in the served store, and the served store answers its
// recalls.
func TestMCPThroughServer(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "remember", "--session", "alice", "Alice's cat is called Miso.")
	startServe(t, dir)
	cs := stdioMCP(t, dir)

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"remember", "recall", "forget", "restore", "revert", "list", "tasks"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools %v lack %s", names, want)
		}
	}
	out, ok := mcpCall(t, cs, "recall", map[string]any{"session": "alice", "query": "cat", "no_touch": true})
	if !ok || !strings.Contains(out, "Miso") {
		t.Fatalf("recall through the server: %s", out)
	}
	out, ok = mcpCall(t, cs, "remember", map[string]any{"session": "alice", "text": "Alice's dog is called Tofu.", "time": "2026-01-02T03:04:05Z"})
	if !ok || !strings.Contains(out, `"older":[false]`) {
		t.Fatalf("remember through the server: %s", out)
	}
	// The served store holds it (memctl recall runs through the server too).
	if got := mustRun(t, dir, "", "recall", "--session", "alice", "--no-touch", "dog"); !strings.Contains(got, "Tofu") {
		t.Fatalf("the served store does not hold the MCP memory:\n%s", got)
	}
	if out, ok = mcpCall(t, cs, "get", map[string]any{"id": "nosuch"}); ok || !strings.Contains(out, `no memory with ID "nosuch"`) {
		t.Fatalf("get of an unknown ID: %v %s", ok, out)
	}
}

// Through a server with keys, memctl mcp sends ENGRAM_TOKEN's key, and the
// server's rights and scopes decide: a reader of alice recalls alice, and
// may neither write nor read bob.
func TestMCPThroughServerWithKey(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "remember", "--session", "alice", "Alice's cat is called Miso.")
	mustRun(t, dir, "", "remember", "--session", "bob", "Bob's cat is called Tofu.")
	keys := filepath.Join(t.TempDir(), "keys.json")
	key := strings.TrimSpace(mustRun(t, dir, "", "keys", "add", "reader", "--keys", keys, "--sessions", "alice", "--rights", "read"))
	startServe(t, dir, "--keys", keys)
	t.Setenv("ENGRAM_TOKEN", key)
	cs := stdioMCP(t, dir)

	if out, ok := mcpCall(t, cs, "recall", map[string]any{"session": "alice", "query": "cat", "no_touch": true}); !ok || !strings.Contains(out, "Miso") {
		t.Fatalf("recall of alice: %s", out)
	}
	if out, ok := mcpCall(t, cs, "recall", map[string]any{"session": "bob", "query": "cat"}); ok || !strings.Contains(out, "outside the scope") {
		t.Fatalf("recall of bob with alice's key: %v %s", ok, out)
	}
	if out, ok := mcpCall(t, cs, "remember", map[string]any{"session": "alice", "text": "x"}); ok || !strings.Contains(out, "lacks the write right") {
		t.Fatalf("remember with a read key: %v %s", ok, out)
	}
}
