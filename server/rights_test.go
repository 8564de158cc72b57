package server

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
	_ = fmt.Sprint
}
