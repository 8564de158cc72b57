package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/server"
)

// The parity test: the same requests go through every door (the request
// layer called as a library, HTTP, MCP, memctl --json on a closed store, and
// memctl --json through the server that holds the store), each door on its
// own copy of one seeded store, in the same order, and every door must
// answer what the library answers. A field added to one door and not the
// others, or a door that drops an argument, fails it. Every route of the
// server and every MCP tool must be exercised by a step, or be listed in
// parityOutside with the reason it is not a request of the layer.

// parityHTTP is a step's HTTP request.
type parityHTTP struct {
	method, path string
	body         any  // nil: none; a string is sent as is, anything else as JSON
	job          bool // answers 202 with a job: the answer is the finished job's result
	lines        bool // answers JSON lines: the answer is their array
}

// parityMCP is a step's tool call.
type parityMCP struct {
	tool string
	args any
}

// parityStep is one request through every door.
type parityStep struct {
	name string
	// route is the route pattern the HTTP request exercises.
	route string
	lib   func(ctx context.Context, l *api.Local) (any, error)
	http  parityHTTP
	mcp   *parityMCP // nil: no tool offers the operation (noMCP says why)
	noMCP string
	cli   []string // memctl arguments (--json is added); nil: no command (noCLI says why)
	stdin string   // what memctl reads from stdin
	noCLI string
	// cliState, for a step without a command that changes the store, is
	// the command that changes the CLI doors' stores alike (its answer is
	// not compared), so that later steps find the same state there. (Steps
	// without a tool come after the last tool's step.)
	cliState []string
	// cliAnswer turns what memctl --json prints into the answer's form (nil:
	// printed as it is); it refuses output with fields it does not know.
	cliAnswer func(any) (any, error)
}

// parityOutside lists the routes that are no request of the layer, with the
// reason; every other route needs a parity step.
var parityOutside = map[string]string{
	"GET /healthz":              "liveness of the process, no store operation",
	"GET /openapi.json":         "the API's description (TestOpenAPICoversEveryRoute keeps it complete)",
	"GET /metrics":              "the server process's Prometheus metrics",
	"GET /{$}":                  "the dashboard's files",
	"GET /ui/":                  "the dashboard's files",
	"/mcp":                      "the MCP door itself: each tool is a parity step",
	"GET /v1/admin/series":      "the dashboard's time series, sampled by the server process",
	"GET /v1/jobs":              "how HTTP runs long operations: the HTTP door follows each job step to its result",
	"GET /v1/jobs/{id}":         "how HTTP runs long operations: the HTTP door follows each job step to its result",
	"POST /v1/jobs/{id}/cancel": "how HTTP runs long operations (cancelling one)",
	"GET /v1/admin/export":      "a stream in the export format: TestAdminCommandsThroughServer compares memctl export on a closed and a served store",
	"POST /v1/admin/import":     "an upload in the export format: TestAdminCommandsThroughServer runs memctl import through a server",
	"POST /v1/admin/backup.tar": "a tar stream of the store's files: TestAdminCommandsThroughServer runs memctl backup through a server",
	"POST /v1/admin/backup":     "writes a directory on the server's disk under --backup-root (memctl backup --server-side)",
}

// parityKnownIDs are the IDs the seed and the steps choose; other IDs are
// new memories' and compare as "<new-id>".
var parityKnownIDs = []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m11", "t1", "t2", "nosuch"}

func str(s string) *string { return &s }

// paritySeed writes the store every door starts from and returns its directory.
func paritySeed(t *testing.T, when time.Time) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "seed")
	var b strings.Builder
	old := when.Add(-390 * 24 * time.Hour)
	// m11 changed m10's fact when it was written (memory.Memory.SupersededBy).
	superseded := fmt.Sprintf(`"superseded_by":"m11","superseded_at":%q`, when.UTC().Format(time.RFC3339Nano))
	for _, m := range []struct {
		id, session, text, extra string
		at                       time.Time
	}{
		{"m1", "alice", "Alice prefers green tea in the morning.", `"tags":["drinks","morning"],"source":"chat"`, when},
		{"m2", "alice", "Alice flies to Osaka on Friday for the conference.", `"tags":["travel"],"metadata":{"project":"apollo"}`, when},
		{"m3", "bob", "Bob drinks pour-over coffee, never instant.", `"source":"doc:notes.md"`, when},
		{"m4", "alice", "Alice's old locker code is 4711.", ``, when},
		{"m5", "carol", "Carol's stale note about the old printer.", ``, old},
		{"m6", "bob", "Bob's desk is by the window in room 12.", `"source":"doc:notes.md"`, when},
		{"m7", "dave", "Dave plays the cello on Sundays.", ``, when},
		// mem0's scopes: user alice's runs, one with an agent (memory.Scope).
		{"m8", "alice", "Alice flies to Lisbon in June.", `"metadata":{"run_id":"trip-42"}`, when},
		{"m9", "alice", "Alice flies to Porto in May.", `"metadata":{"run_id":"other-run","agent_id":"planner"}`, when},
		{"m10", "bob", "Bob works at Acme as an engineer.", superseded, when.Add(-20 * 24 * time.Hour)},
		{"m11", "bob", "Bob now works at Initech as an engineer.", ``, when},
	} {
		extra := m.extra
		if extra != "" {
			extra = "," + extra
		}
		at := m.at.UTC().Format(time.RFC3339Nano)
		fmt.Fprintf(&b, `{"id":%q,"session":%q,"text":%s,"importance":0.5,"created":%q,"updated":%q%s}`+"\n", m.id, m.session, jsonString(m.text), at, at, extra)
	}
	file := filepath.Join(t.TempDir(), "seed.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "", "import", file)
	mustRun(t, dir, "", "forget", "m4")
	mustRun(t, dir, "", "update", "m1", "--text", "Alice prefers oolong tea in the morning.")
	mustRun(t, dir, "", "context", "add", "--session", "alice", "--role", "user", "Hello, I am planning a trip.")
	mustRun(t, dir, "", "tasks", "start", "t1", "--goal", "pack for Osaka", "--session", "alice")
	mustRun(t, dir, "", "tasks", "step", "t1", "passport", "--status", "done", "--result", `{"found":true}`, "--next", "tickets")
	return dir
}

// paritySteps are the requests, in the order every door runs them. The
// recalls come first, on the seed as it is: BM25's statistics depend on what
// each process has flushed and compacted (memctl compacts when it closes
// the store), so after writes the scores would differ by door for reasons
// that are not the request's.
func paritySteps(when time.Time) []parityStep {
	rememberTime := when.Add(time.Hour).UTC()
	olderTime := when.Add(-5 * 24 * time.Hour).UTC()
	turns := []memory.Turn{{Text: "I'm flying soon"}, {Text: "what should I pack?"}}
	travel := memory.Eq(memory.FieldTag, "travel")
	apollo := memory.Eq("metadata.project", "apollo")
	notes := memory.Eq(memory.FieldSource, "doc:notes.md")
	aliceOnly := memory.Eq(memory.FieldSession, "alice")
	remember := func(req api.RememberRequest) func(context.Context, *api.Local) (any, error) {
		return func(ctx context.Context, l *api.Local) (any, error) { return l.Remember(ctx, req) }
	}
	recall := func(req api.RecallRequest) func(context.Context, *api.Local) (any, error) {
		return func(ctx context.Context, l *api.Local) (any, error) { return l.Recall(ctx, req) }
	}
	forget := func(req api.ForgetRequest) func(context.Context, *api.Local) (any, error) {
		return func(ctx context.Context, l *api.Local) (any, error) { return l.Forget(ctx, req) }
	}
	list := func(req api.ListRequest) func(context.Context, *api.Local) (any, error) {
		return func(ctx context.Context, l *api.Local) (any, error) { return l.List(ctx, req) }
	}
	type m = map[string]any
	rec1 := api.RememberRequest{Session: "alice", Text: "Alice's sister Mia lives in Porto.", Context: "Where does your sister live?",
		Source: "chat", Tags: []string{"family"}, Importance: 0.7, Time: rememberTime, Metadata: m{"confidence": 0.9}}
	rec2 := api.RememberRequest{Session: "alice", Text: "Alice prefers oolong tea in the morning.", Time: olderTime}
	r3 := api.RecallRequest{Session: "alice", Query: "tea", K: 3, NoTouch: true}
	r4 := api.RecallRequest{Session: "alice", Query: "Alice tea Osaka morning", Mode: "keyword", MinScore: new(0.7), NoTouch: true}
	r5 := api.RecallRequest{AllSessions: true, Query: "coffee", K: 4, Fusion: "rrf", VectorWeight: 0.3, KeywordWeight: 0.7, NoDecay: true, NoTouch: true}
	r6 := api.RecallRequest{Session: "alice", Turns: turns, Filter: travel, NoTouch: true}
	r7 := api.RecallRequest{Session: "nobody", Query: "tea", NoTouch: true}
	r8 := api.RecallRequest{Session: "alice", Query: "tea", PromptTokens: 200, NoTouch: true}
	r9 := api.RecallRequest{Session: "alice", Query: "tea", Mode: "bogus"}
	r10 := api.RecallRequest{Session: "bob", Query: "coffee", K: 1}
	f26 := api.ForgetRequest{IDs: []string{"m1"}, All: true, Session: str("alice")}
	// mem0's scopes (api.ScopeIDs): the quoted bug is a recall in one run finding another's.
	r11 := api.RecallRequest{ScopeIDs: api.ScopeIDs{UserID: "alice", RunID: "other-run"}, Query: "Alice flies", K: 10, NoTouch: true}
	r12 := api.RecallRequest{Session: "alice", ScopeIDs: api.ScopeIDs{AgentID: "planner", RunID: "other-run"}, Query: "Alice flies", NoTouch: true}
	r13 := api.RecallRequest{Session: "alice", ScopeIDs: api.ScopeIDs{UserID: "bob"}, Query: "tea"}
	// Current facts: a superseded memory demoted (the default), hidden, kept; the floors; as_of.
	r20 := api.RecallRequest{Session: "bob", Query: "where does Bob work", NoTouch: true}
	r21 := api.RecallRequest{Session: "bob", Query: "where does Bob work", Superseded: "hide", MinScore: new(0.0), NoTouch: true}
	r22 := api.RecallRequest{Session: "bob", Query: "where does Bob work", Superseded: "keep", MinRelative: new(0.5), NoTouch: true}
	r23 := api.RecallRequest{Session: "bob", Query: "where does Bob work", AsOf: when.Add(-24 * time.Hour).Format(time.RFC3339), NoTouch: true}
	r24 := api.RecallRequest{Session: "alice", Query: "tea", AsOf: when.Add(time.Hour).Format("2006-01-02T15:04:05Z07:00"), MinScore: new(0.0), MinRelative: new(0.0), NoTouch: true}
	r25 := api.RecallRequest{Session: "bob", Query: "Bob", Superseded: "drop"}
	l14 := api.ListRequest{ScopeIDs: api.ScopeIDs{UserID: "alice", AgentID: "planner"}}
	// Times of their own, so that listings newest first order them alike in every door.
	rec15 := api.RememberRequest{ScopeIDs: api.ScopeIDs{UserID: "erin", RunID: "r1"}, Text: "Erin rides the 7:40 train to work.", Time: when.Add(-time.Hour).UTC()}
	chatTime := when.Add(-48 * time.Hour).UTC()
	msgs := []memory.Turn{
		{Role: "system", Text: "You are a helpful assistant."},
		{Role: "user", Text: "Hi! I'm Erin and I'm allergic to peanuts.", Time: chatTime},
		{Role: "assistant", Text: "Nice to meet you, Erin! I'll remember that.", Time: chatTime.Add(time.Minute)},
		{Role: "user", Text: "haha ok. My sister Jenna moved to Denver last week.", Time: chatTime.Add(2 * time.Minute)},
	}
	msgs2 := []memory.Turn{{Role: "user", Text: "I run every morning before work.", Time: chatTime.Add(-time.Hour)},
		{Role: "assistant", Text: "Great habit!", Time: chatTime.Add(-time.Hour + time.Minute)}}
	msgs2JSON, _ := json.Marshal(msgs2)
	msgsJSON, _ := json.Marshal(msgs)
	rec16 := api.RememberRequest{ScopeIDs: api.ScopeIDs{UserID: "erin", AgentID: "coach"}, Messages: msgs, Infer: true, Tags: []string{"chat"}}
	rec17 := api.RememberRequest{Session: "frank", Messages: msgs2}
	f18 := api.ForgetRequest{ScopeIDs: api.ScopeIDs{UserID: "alice", RunID: "trip-42"}, All: true}
	usage := "the CLI refuses it as a usage error (exit 2) before it sends a request"
	admin := "store maintenance with the admin right: HTTP and the CLI only"
	return []parityStep{
		{name: "recall", route: "POST /v1/recall", lib: recall(r3), http: parityHTTP{method: "POST", path: "/v1/recall", body: r3},
			mcp: &parityMCP{"recall", r3}, cli: []string{"recall", "--session", "alice", "--k", "3", "--no-touch", "tea"}},
		{name: "recall by keyword with a score floor", route: "POST /v1/recall", lib: recall(r4), http: parityHTTP{method: "POST", path: "/v1/recall", body: r4},
			mcp: &parityMCP{"recall", r4}, cli: []string{"recall", "--session", "alice", "--mode", "keyword", "--min-score", "0.7", "--no-touch", r4.Query}},
		{name: "recall from every session, rrf, weights, no decay", route: "POST /v1/recall", lib: recall(r5), http: parityHTTP{method: "POST", path: "/v1/recall", body: r5},
			mcp: &parityMCP{"recall", r5}, cli: []string{"recall", "--all-sessions", "--k", "4", "--fusion", "rrf", "--vector-weight", "0.3", "--keyword-weight", "0.7",
				"--no-decay", "--no-touch", "coffee"}},
		{name: "recall for a conversation, filtered", route: "POST /v1/recall", lib: recall(r6), http: parityHTTP{method: "POST", path: "/v1/recall", body: r6},
			mcp: &parityMCP{"recall", r6}, cli: []string{"recall", "--session", "alice", "--turn", turns[0].Text, "--turn", turns[1].Text, "--tag", "travel", "--no-touch"}},
		{name: "recall from an empty session", route: "POST /v1/recall", lib: recall(r7), http: parityHTTP{method: "POST", path: "/v1/recall", body: r7},
			mcp: &parityMCP{"recall", r7}, cli: []string{"recall", "--session", "nobody", "--no-touch", "tea"}},
		{name: "recall with the prompt block", route: "POST /v1/recall", lib: recall(r8), http: parityHTTP{method: "POST", path: "/v1/recall", body: r8},
			mcp: &parityMCP{"recall", r8}, noCLI: "recall --prompt prints the prompt (text, included, skipped, tokens) instead of the answer"},
		{name: "recall with an unknown mode", route: "POST /v1/recall", lib: recall(r9), http: parityHTTP{method: "POST", path: "/v1/recall", body: r9},
			mcp: &parityMCP{"recall", r9}, noCLI: usage},
		{name: "recall that counts as an access", route: "POST /v1/recall", lib: recall(r10), http: parityHTTP{method: "POST", path: "/v1/recall", body: r10},
			mcp: &parityMCP{"recall", r10}, cli: []string{"recall", "--session", "bob", "--k", "1", "coffee"}},
		{name: "recall of a changed fact", route: "POST /v1/recall", lib: recall(r20), http: parityHTTP{method: "POST", path: "/v1/recall", body: r20},
			mcp: &parityMCP{"recall", r20}, cli: []string{"recall", "--session", "bob", "--no-touch", r20.Query}},
		{name: "recall hiding what is superseded, no score floor", route: "POST /v1/recall", lib: recall(r21), http: parityHTTP{method: "POST", path: "/v1/recall", body: r21},
			mcp: &parityMCP{"recall", r21}, cli: []string{"recall", "--session", "bob", "--superseded", "hide", "--min-score", "0", "--no-touch", r21.Query}},
		{name: "recall keeping the first release's ranking, a relative floor", route: "POST /v1/recall", lib: recall(r22), http: parityHTTP{method: "POST", path: "/v1/recall", body: r22},
			mcp: &parityMCP{"recall", r22}, cli: []string{"recall", "--session", "bob", "--superseded", "keep", "--min-relative", "0.5", "--no-touch", r22.Query}},
		{name: "recall as of before the change", route: "POST /v1/recall", lib: recall(r23), http: parityHTTP{method: "POST", path: "/v1/recall", body: r23},
			mcp: &parityMCP{"recall", r23}, cli: []string{"recall", "--session", "bob", "--as-of", r23.AsOf, "--no-touch", r23.Query}},
		{name: "recall as of before an update, no floors", route: "POST /v1/recall", lib: recall(r24), http: parityHTTP{method: "POST", path: "/v1/recall", body: r24},
			mcp: &parityMCP{"recall", r24}, cli: []string{"recall", "--session", "alice", "--as-of", r24.AsOf, "--min-score", "0", "--min-relative", "0", "--no-touch", r24.Query}},
		{name: "recall with an unknown superseded policy", route: "POST /v1/recall", lib: recall(r25), http: parityHTTP{method: "POST", path: "/v1/recall", body: r25},
			mcp: &parityMCP{"recall", r25}, noCLI: usage},
		{name: "recall in a user's run", route: "POST /v1/recall", lib: recall(r11), http: parityHTTP{method: "POST", path: "/v1/recall", body: r11},
			mcp: &parityMCP{"recall", r11}, cli: []string{"recall", "--user-id", "alice", "--run-id", "other-run", "--k", "10", "--no-touch", r11.Query}},
		{name: "recall in a session's agent and run", route: "POST /v1/recall", lib: recall(r12), http: parityHTTP{method: "POST", path: "/v1/recall", body: r12},
			mcp: &parityMCP{"recall", r12}, cli: []string{"recall", "--session", "alice", "--agent-id", "planner", "--run-id", "other-run", "--no-touch", r12.Query}},
		{name: "recall with a session and a user that differ", route: "POST /v1/recall", lib: recall(r13), http: parityHTTP{method: "POST", path: "/v1/recall", body: r13},
			mcp: &parityMCP{"recall", r13}, cli: []string{"recall", "--session", "alice", "--user-id", "bob", "tea"}},
		{name: "list a user's agent", route: "GET /v1/memories", lib: list(l14),
			http: parityHTTP{method: "GET", path: "/v1/memories?user_id=alice&agent_id=planner"}, mcp: &parityMCP{"list", m{"user_id": "alice", "agent_id": "planner"}},
			cli: []string{"list", "--user-id", "alice", "--agent-id", "planner"}},
		{name: "remember in a user's run", route: "POST /v1/remember", lib: remember(rec15),
			http: parityHTTP{method: "POST", path: "/v1/remember", body: rec15}, mcp: &parityMCP{"remember", rec15},
			cli: []string{"remember", "--user-id", "erin", "--run-id", "r1", "--time", rec15.Time.Format(time.RFC3339), rec15.Text}, cliAnswer: rememberAnswer},
		{name: "remember messages, inferred", route: "POST /v1/remember", lib: remember(rec16),
			http: parityHTTP{method: "POST", path: "/v1/remember", body: rec16}, mcp: &parityMCP{"remember", rec16},
			cli: []string{"remember", "--user-id", "erin", "--agent-id", "coach", "--tag", "chat", "--messages", "-", "--infer"}, stdin: string(msgsJSON)},
		{name: "remember messages verbatim", route: "POST /v1/remember", lib: remember(rec17),
			http: parityHTTP{method: "POST", path: "/v1/remember", body: rec17}, mcp: &parityMCP{"remember", rec17},
			cli: []string{"remember", "--session", "frank", "--messages", "-"}, stdin: string(msgs2JSON)},
		{name: "remember with time, context, tags and metadata", route: "POST /v1/remember", lib: remember(rec1),
			http: parityHTTP{method: "POST", path: "/v1/remember", body: rec1}, mcp: &parityMCP{"remember", rec1},
			cli: []string{"remember", "--session", "alice", "--context", rec1.Context, "--source", "chat", "--tag", "family", "--importance", "0.7",
				"--time", rememberTime.Format(time.RFC3339), "--metadata", `{"confidence": 0.9}`, rec1.Text},
			cliAnswer: rememberAnswer},
		{name: "remember older than the memory it matches", route: "POST /v1/remember", lib: remember(rec2),
			http: parityHTTP{method: "POST", path: "/v1/remember", body: rec2}, mcp: &parityMCP{"remember", rec2},
			cli: []string{"remember", "--session", "alice", "--time", olderTime.Format(time.RFC3339), rec2.Text}, cliAnswer: rememberAnswer},
		{name: "get (the access counted)", route: "GET /v1/memories/{id}",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Get(ctx, api.GetRequest{ID: "m3"}) },
			http: parityHTTP{method: "GET", path: "/v1/memories/m3"}, mcp: &parityMCP{"get", m{"id": "m3"}}, cli: []string{"get", "m3"}},
		{name: "get with the vector", route: "GET /v1/memories/{id}",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.Get(ctx, api.GetRequest{ID: "m1", Vector: true})
			},
			http: parityHTTP{method: "GET", path: "/v1/memories/m1?vector=true"}, mcp: &parityMCP{"get", m{"id": "m1", "vector": true}}, cli: []string{"get", "--vector", "m1"}},
		{name: "get an unknown memory", route: "GET /v1/memories/{id}",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Get(ctx, api.GetRequest{ID: "nosuch"}) },
			http: parityHTTP{method: "GET", path: "/v1/memories/nosuch"}, mcp: &parityMCP{"get", m{"id": "nosuch"}}, cli: []string{"get", "nosuch"}},
		{name: "list a session by tag", route: "GET /v1/memories", lib: list(api.ListRequest{Session: str("alice"), Selection: api.Selection{Tags: []string{"travel"}}}),
			http: parityHTTP{method: "GET", path: "/v1/memories?session=alice&tag=travel"}, mcp: &parityMCP{"list", m{"session": "alice", "tags": []string{"travel"}}},
			cli: []string{"list", "--session", "alice", "--tag", "travel"}},
		{name: "list every session since an age, a page", route: "GET /v1/memories", lib: list(api.ListRequest{Selection: api.Selection{Since: "30d"}, Limit: 2}),
			http: parityHTTP{method: "GET", path: "/v1/memories?since=30d&limit=2"}, mcp: &parityMCP{"list", m{"since": "30d", "limit": 2}},
			cli: []string{"list", "--all-sessions", "--since", "30d", "--limit", "2"}},
		{name: "list by a filter", route: "GET /v1/memories", lib: list(api.ListRequest{Filter: apollo}),
			http: parityHTTP{method: "GET", path: "/v1/memories?where=" + url.QueryEscape(`{"metadata.project":"apollo"}`)},
			mcp:  &parityMCP{"list", m{"filter": apollo}}, cli: []string{"list", "--all-sessions", "--where", `{"metadata.project": "apollo"}`}},
		{name: "update", route: "PATCH /v1/memories/{id}",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				tags, imp := []string{"travel", "work"}, 0.8
				return l.Update(ctx, "m2", api.UpdateRequest{Tags: &tags, Importance: &imp})
			},
			http: parityHTTP{method: "PATCH", path: "/v1/memories/m2", body: m{"tags": []string{"travel", "work"}, "importance": 0.8}},
			mcp:  &parityMCP{"update", m{"id": "m2", "tags": []string{"travel", "work"}, "importance": 0.8}},
			cli:  []string{"update", "m2", "--tag", "travel", "--tag", "work", "--importance", "0.8"}},
		{name: "history", route: "GET /v1/memories/{id}/history",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.History(ctx, "m1") },
			http: parityHTTP{method: "GET", path: "/v1/memories/m1/history"}, mcp: &parityMCP{"history", m{"id": "m1"}}, cli: []string{"history", "m1"}},
		{name: "revert", route: "POST /v1/memories/{id}/revert",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.Revert(ctx, "m1", api.RevertRequest{Version: 1})
			},
			http: parityHTTP{method: "POST", path: "/v1/memories/m1/revert", body: m{"version": 1}}, mcp: &parityMCP{"revert", m{"id": "m1", "version": 1}},
			cli: []string{"history", "revert", "m1", "1"}},
		{name: "delete one memory", route: "DELETE /v1/memories/{id}",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Delete(ctx, "m6") },
			http: parityHTTP{method: "DELETE", path: "/v1/memories/m6"}, mcp: &parityMCP{"delete", m{"id": "m6"}},
			noCLI: "memctl forget ID deletes by ID (POST /v1/forget)", cliState: []string{"forget", "m6"}},
		{name: "forget by ID", route: "POST /v1/forget", lib: forget(api.ForgetRequest{IDs: []string{"m2"}}),
			http: parityHTTP{method: "POST", path: "/v1/forget", body: m{"ids": []string{"m2"}}}, mcp: &parityMCP{"forget", m{"ids": []string{"m2"}}},
			cli: []string{"forget", "m2"}},
		{name: "forget by a filter in a session", route: "POST /v1/forget", lib: forget(api.ForgetRequest{Session: str("bob"), Filter: notes}),
			http: parityHTTP{method: "POST", path: "/v1/forget", body: m{"session": "bob", "filter": notes}}, mcp: &parityMCP{"forget", m{"session": "bob", "filter": notes}},
			cli: []string{"forget", "--session", "bob", "--source", "doc:notes.md"}},
		{name: "forget a whole session", route: "POST /v1/forget", lib: forget(api.ForgetRequest{Session: str("dave"), All: true}),
			http: parityHTTP{method: "POST", path: "/v1/forget", body: m{"session": "dave", "all": true}}, mcp: &parityMCP{"forget", m{"session": "dave", "all": true}},
			cli: []string{"forget", "--session", "dave", "--all"}},
		{name: "forget for good", route: "POST /v1/forget", lib: forget(api.ForgetRequest{IDs: []string{"m4"}, Purge: true}),
			http: parityHTTP{method: "POST", path: "/v1/forget", body: m{"ids": []string{"m4"}, "purge": true}}, mcp: &parityMCP{"forget", m{"ids": []string{"m4"}, "purge": true}},
			cli: []string{"forget", "--purge", "m4"}},
		{name: "forget a user's run", route: "POST /v1/forget", lib: forget(f18),
			http: parityHTTP{method: "POST", path: "/v1/forget", body: f18}, mcp: &parityMCP{"forget", f18},
			cli: []string{"forget", "--user-id", "alice", "--run-id", "trip-42", "--all"}},
		{name: "forget an unknown ID", route: "POST /v1/forget", lib: forget(api.ForgetRequest{IDs: []string{"nosuch"}}),
			http: parityHTTP{method: "POST", path: "/v1/forget", body: m{"ids": []string{"nosuch"}}}, mcp: &parityMCP{"forget", m{"ids": []string{"nosuch"}}},
			cli: []string{"forget", "nosuch"}},
		{name: "forget two ways at once", route: "POST /v1/forget", lib: forget(f26),
			http: parityHTTP{method: "POST", path: "/v1/forget", body: f26}, mcp: &parityMCP{"forget", f26}, noCLI: usage},
		{name: "the trash", route: "GET /v1/forgotten",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Forgotten(ctx, api.ForgottenRequest{}) },
			http: parityHTTP{method: "GET", path: "/v1/forgotten"}, mcp: &parityMCP{"forgotten", m{}}, cli: []string{"forgotten"}, cliAnswer: wrapIn("memories")},
		{name: "the trash of a session", route: "GET /v1/forgotten",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.Forgotten(ctx, api.ForgottenRequest{Session: str("bob")})
			},
			http: parityHTTP{method: "GET", path: "/v1/forgotten?session=bob"}, mcp: &parityMCP{"forgotten", m{"session": "bob"}},
			cli: []string{"forgotten", "--session", "bob"}, cliAnswer: wrapIn("memories")},
		{name: "restore from the trash", route: "POST /v1/restore",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.RestoreForgotten(ctx, api.RestoreForgottenRequest{IDs: []string{"m2"}})
			},
			http: parityHTTP{method: "POST", path: "/v1/restore", body: m{"ids": []string{"m2"}}}, mcp: &parityMCP{"restore", m{"ids": []string{"m2"}}},
			cli: []string{"restore", "m2"}},
		{name: "restore an unknown ID", route: "POST /v1/restore",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.RestoreForgotten(ctx, api.RestoreForgottenRequest{IDs: []string{"nosuch"}})
			},
			http: parityHTTP{method: "POST", path: "/v1/restore", body: m{"ids": []string{"nosuch"}}}, mcp: &parityMCP{"restore", m{"ids": []string{"nosuch"}}},
			cli: []string{"restore", "nosuch"}},
		{name: "sessions", route: "GET /v1/sessions",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Sessions(ctx) },
			http: parityHTTP{method: "GET", path: "/v1/sessions"}, mcp: &parityMCP{"sessions", m{}}, cli: []string{"sessions"}, cliAnswer: wrapIn("sessions")},
		{name: "a conversation", route: "GET /v1/sessions/{session}/context",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Context(ctx, "alice") },
			http: parityHTTP{method: "GET", path: "/v1/sessions/alice/context"}, mcp: &parityMCP{"context", m{"session": "alice"}},
			cli: []string{"context", "show", "--session", "alice"}},
		{name: "add a turn", route: "POST /v1/sessions/{session}/turns",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.AddTurn(ctx, "alice", memory.Turn{Role: "assistant", Text: "Have a good trip!"})
			},
			http: parityHTTP{method: "POST", path: "/v1/sessions/alice/turns", body: m{"role": "assistant", "text": "Have a good trip!"}},
			mcp:  &parityMCP{"add_turn", m{"session": "alice", "role": "assistant", "text": "Have a good trip!"}},
			cli:  []string{"context", "add", "--session", "alice", "--role", "assistant", "Have a good trip!"}},
		{name: "distill a conversation", route: "POST /v1/sessions/{session}/distill",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Distill(ctx, "alice") },
			http: parityHTTP{method: "POST", path: "/v1/sessions/alice/distill", body: m{}}, mcp: &parityMCP{"distill", m{"session": "alice"}},
			cli: []string{"context", "distill", "--session", "alice"}},
		{name: "clear a conversation", route: "DELETE /v1/sessions/{session}/context",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.ClearContext(ctx, "alice") },
			http: parityHTTP{method: "DELETE", path: "/v1/sessions/alice/context"}, mcp: &parityMCP{"clear_context", m{"session": "alice"}},
			cli: []string{"context", "clear", "--session", "alice"}},
		{name: "tasks", route: "GET /v1/tasks",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Tasks(ctx) },
			http: parityHTTP{method: "GET", path: "/v1/tasks"}, mcp: &parityMCP{"tasks", m{}}, cli: []string{"tasks", "list"}, cliAnswer: wrapIn("tasks")},
		{name: "a task", route: "GET /v1/tasks/{id}",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Task(ctx, api.TaskRef{ID: "t1"}) },
			http: parityHTTP{method: "GET", path: "/v1/tasks/t1"}, mcp: &parityMCP{"task", m{"id": "t1"}}, cli: []string{"tasks", "show", "t1"}},
		{name: "a task named with its session", route: "GET /v1/tasks/{id}",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.Task(ctx, api.TaskRef{ID: "t1", Session: str("alice")})
			},
			http: parityHTTP{method: "GET", path: "/v1/tasks/t1?session=alice"}, mcp: &parityMCP{"task", m{"id": "t1", "session": "alice"}},
			cli: []string{"tasks", "show", "t1", "--session", "alice"}},
		{name: "start a task", route: "POST /v1/tasks",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.StartTask(ctx, api.StartTaskRequest{ID: "t2", Goal: "write the report", Session: "bob"})
			},
			http: parityHTTP{method: "POST", path: "/v1/tasks", body: m{"id": "t2", "goal": "write the report", "session": "bob"}},
			mcp:  &parityMCP{"start_task", m{"id": "t2", "goal": "write the report", "session": "bob"}},
			cli:  []string{"tasks", "start", "t2", "--goal", "write the report", "--session", "bob"}},
		{name: "record a step", route: "POST /v1/tasks/{id}/steps",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.UpdateStep(ctx, api.TaskRef{ID: "t2"}, api.StepRequest{Name: "draft", Status: memory.StepDone, Result: json.RawMessage(`{"pages":3}`), Next: "review"})
			},
			http: parityHTTP{method: "POST", path: "/v1/tasks/t2/steps", body: m{"name": "draft", "status": "done", "result": m{"pages": 3}, "next": "review"}},
			mcp:  &parityMCP{"update_step", m{"id": "t2", "name": "draft", "status": "done", "result": m{"pages": 3}, "next": "review"}},
			cli:  []string{"tasks", "step", "t2", "draft", "--status", "done", "--result", `{"pages": 3}`, "--next", "review"}},
		{name: "finish a task", route: "POST /v1/tasks/{id}/finish",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.FinishTask(ctx, api.TaskRef{ID: "t2"}, api.FinishRequest{Status: memory.TaskFailed})
			},
			http: parityHTTP{method: "POST", path: "/v1/tasks/t2/finish", body: m{"status": "failed"}}, mcp: &parityMCP{"finish_task", m{"id": "t2", "status": "failed"}},
			cli: []string{"tasks", "finish", "t2", "--status", "failed"}},
		{name: "delete a task", route: "DELETE /v1/tasks/{id}",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.DeleteTask(ctx, api.TaskRef{ID: "t2"}) },
			http: parityHTTP{method: "DELETE", path: "/v1/tasks/t2"}, mcp: &parityMCP{"delete_task", m{"id": "t2"}},
			cli: []string{"tasks", "delete", "t2"}, cliAnswer: deletedTaskAnswer},
		{name: "an unknown task", route: "GET /v1/tasks/{id}",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Task(ctx, api.TaskRef{ID: "nosuch"}) },
			http: parityHTTP{method: "GET", path: "/v1/tasks/nosuch"}, mcp: &parityMCP{"task", m{"id": "nosuch"}}, cli: []string{"tasks", "show", "nosuch"}},
		{name: "export a session's memories", route: "POST /v1/export",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				var b bytes.Buffer
				if _, err := l.Export(ctx, &b, api.ExportRequest{Filter: aliceOnly}); err != nil {
					return nil, err
				}
				return jsonLines(b.Bytes())
			},
			http:  parityHTTP{method: "POST", path: "/v1/export", body: m{"filter": aliceOnly}, lines: true},
			noMCP: "a stream of JSON lines, not a tool's answer", noCLI: "memctl export is the admin export (GET /v1/admin/export), with conversations and tasks"},
		{name: "cleanup in the caller's scope, dry run", route: "POST /v1/cleanup",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.Cleanup(ctx, api.CleanupRequest{Session: str("carol"), OlderThan: "300d", DryRun: true}, nil)
			},
			http:  parityHTTP{method: "POST", path: "/v1/cleanup", body: m{"session": "carol", "older_than": "300d", "dry_run": true}},
			noMCP: admin, cli: []string{"cleanup", "--session", "carol", "--older-than", "300d", "--dry-run"}},
		{name: "statistics", route: "GET /v1/stats",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				st, err := l.Stats(ctx)
				return st.Stats, err
			},
			http: parityHTTP{method: "GET", path: "/v1/stats"}, noMCP: admin, cli: []string{"stats"}},
		{name: "statistics with the directory", route: "GET /v1/admin/stats",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Stats(ctx) },
			http: parityHTTP{method: "GET", path: "/v1/admin/stats"}, noMCP: admin, noCLI: "stats --json prints GET /v1/stats's form (the directory is in its text)"},
		{name: "flush", route: "POST /v1/admin/flush",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Flush(ctx) },
			http: parityHTTP{method: "POST", path: "/v1/admin/flush", body: m{}}, noMCP: admin,
			noCLI: "no flush command: every memctl command flushes when it closes the store"},
		{name: "check", route: "POST /v1/admin/check",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Check(ctx, nil) },
			http: parityHTTP{method: "POST", path: "/v1/admin/check", body: m{}, job: true}, noMCP: admin, cli: []string{"check"}, cliAnswer: checkAnswer},
		{name: "compact", route: "POST /v1/admin/compact",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Compact(ctx, nil) },
			http: parityHTTP{method: "POST", path: "/v1/admin/compact", body: m{}, job: true}, noMCP: admin, cli: []string{"compact"}},
		{name: "cleanup", route: "POST /v1/admin/cleanup",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.AdminCleanup(ctx, api.CleanupRequest{Session: str("carol"), OlderThan: "300d"}, nil)
			},
			http:  parityHTTP{method: "POST", path: "/v1/admin/cleanup", body: m{"session": "carol", "older_than": "300d"}, job: true},
			noMCP: admin, cli: []string{"cleanup", "--session", "carol", "--older-than", "300d"}},
		{name: "the archive", route: "GET /v1/admin/archive",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.Archived(ctx) },
			http: parityHTTP{method: "GET", path: "/v1/admin/archive"}, noMCP: admin, cli: []string{"archive", "list"}, cliAnswer: wrapIn("memories")},
		{name: "restore from the archive", route: "POST /v1/admin/archive/restore",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.RestoreArchived(ctx, api.RestoreRequest{IDs: []string{"m5"}}, nil)
			},
			http:  parityHTTP{method: "POST", path: "/v1/admin/archive/restore", body: m{"ids": []string{"m5"}}, job: true},
			noMCP: admin, cli: []string{"archive", "restore", "m5"}},
		{name: "restore an unknown ID from the archive", route: "POST /v1/admin/archive/restore",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				return l.RestoreArchived(ctx, api.RestoreRequest{IDs: []string{"m5", "nosuch"}}, nil)
			},
			http:  parityHTTP{method: "POST", path: "/v1/admin/archive/restore", body: m{"ids": []string{"m5", "nosuch"}}, job: true},
			noMCP: admin, cli: []string{"archive", "restore", "m5", "nosuch"}},
		{name: "empty the trash", route: "POST /v1/admin/forgotten/purge",
			lib:  func(ctx context.Context, l *api.Local) (any, error) { return l.PurgeForgotten(ctx) },
			http: parityHTTP{method: "POST", path: "/v1/admin/forgotten/purge", body: m{}}, noMCP: admin, cli: []string{"forgotten", "--purge"}},
		{name: "reembed", route: "POST /v1/admin/reembed",
			lib: func(ctx context.Context, l *api.Local) (any, error) {
				req := api.ReembedRequest{To: "lexical"}
				e, err := l.Embedder(req)
				if err != nil {
					return nil, err
				}
				return l.Reembed(ctx, req, e, nil)
			},
			http:  parityHTTP{method: "POST", path: "/v1/admin/reembed", body: m{"to": "lexical"}, job: true},
			noMCP: admin, cli: []string{"reembed", "--to", "lexical"}, cliAnswer: reembedAnswer},
	}
}

// ---- what memctl prints, in the answer's form ----

// fields checks that v is an object with exactly the keys want.
func fields(v any, want ...string) (map[string]any, error) {
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("CLI printed %T, want an object", v)
	}
	for k := range o {
		if !slices.Contains(want, k) {
			return nil, fmt.Errorf("CLI printed the field %q, which the answer does not have", k)
		}
	}
	return o, nil
}

// rememberAnswer: remember prints one object per chunk (with its origin).
func rememberAnswer(v any) (any, error) {
	rows, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("CLI printed %T, want an array", v)
	}
	out := map[string]any{"ids": []any{}, "merged": []any{}, "superseded": []any{}, "older": []any{}}
	for _, r := range rows {
		o, err := fields(r, "id", "merged", "superseded", "older", "origin")
		if err != nil {
			return nil, err
		}
		out["ids"] = append(out["ids"].([]any), o["id"])
		for _, k := range []string{"merged", "superseded", "older"} {
			out[k] = append(out[k].([]any), o[k])
		}
	}
	return out, nil
}

// wrapIn: the CLI prints a listing's array without the object around it.
func wrapIn(key string) func(any) (any, error) {
	return func(v any) (any, error) {
		if _, ok := v.([]any); !ok {
			return nil, fmt.Errorf("CLI printed %T, want an array", v)
		}
		return map[string]any{key: v}, nil
	}
}

// deletedTaskAnswer: tasks delete prints the deleted task's ID.
func deletedTaskAnswer(v any) (any, error) {
	o, err := fields(v, "deleted")
	if err != nil {
		return nil, err
	}
	if _, ok := o["deleted"].(string); !ok {
		return nil, fmt.Errorf("CLI printed deleted=%v, want the task's ID", o["deleted"])
	}
	return map[string]any{"deleted": true}, nil
}

// checkAnswer: check prints ok and the unknown files (as unknown_files), actions and notes, as
// arrays even when empty.
func checkAnswer(v any) (any, error) {
	o, err := fields(v, "ok", "unknown_files", "actions", "notes")
	if err != nil {
		return nil, err
	}
	out := map[string]any{"ok": o["ok"]}
	for from, to := range map[string]string{"unknown_files": "unknown", "actions": "actions", "notes": "notes"} {
		if l, _ := o[from].([]any); len(l) > 0 {
			out[to] = l
		}
	}
	return out, nil
}

// reembedAnswer: reembed prints the embedder as "embedder".
func reembedAnswer(v any) (any, error) {
	o, err := fields(v, "embedder", "fingerprint")
	if err != nil {
		return nil, err
	}
	return map[string]any{"fingerprint": o["fingerprint"], "to": o["embedder"]}, nil
}

func jsonLines(data []byte) (any, error) {
	out := []any{}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, fmt.Errorf("line %q: %v", line, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// ---- outcomes ----

// outcome is what a door answered: JSON, or an error's message (with the
// HTTP status where the door has one).
type outcome struct {
	ok     bool
	value  any
	msg    string
	status int
}

func (o outcome) String() string {
	if !o.ok {
		return fmt.Sprintf("error %d %q", o.status, o.msg)
	}
	b, _ := json.MarshalIndent(o.value, "", "  ")
	return string(b)
}

// statusFor maps a layer error as the server does.
func statusFor(err error) int {
	switch {
	case errors.Is(err, api.ErrBadRequest), errors.Is(err, memory.ErrInvalidInput), errors.Is(err, memory.ErrInvalidFilter):
		return http.StatusBadRequest
	case errors.Is(err, api.ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, memory.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, memory.ErrUnsupported):
		return http.StatusNotImplemented
	}
	return http.StatusInternalServerError
}

func decoded(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

func libOutcome(ctx context.Context, l *api.Local, st parityStep) outcome {
	v, err := st.lib(ctx, l)
	if err != nil {
		return outcome{msg: err.Error(), status: statusFor(err)}
	}
	d, err := decoded(v)
	if err != nil {
		return outcome{msg: "undecodable: " + err.Error()}
	}
	return outcome{ok: true, value: d}
}

func httpOutcome(t *testing.T, base string, c parityHTTP) outcome {
	t.Helper()
	var body io.Reader
	switch b := c.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(c.method, base+c.path, body)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e struct{ Error string }
		json.Unmarshal(data, &e)
		return outcome{msg: e.Error, status: resp.StatusCode}
	}
	if c.lines {
		v, err := jsonLines(data)
		if err != nil {
			return outcome{msg: err.Error()}
		}
		return outcome{ok: true, value: v}
	}
	if c.job {
		var j server.Job
		if err := json.Unmarshal(data, &j); err != nil {
			t.Fatalf("%s %s: %s", c.method, c.path, data)
		}
		for deadline := time.Now().Add(time.Minute); j.State == server.JobRunning && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			if o := httpOutcome(t, base, parityHTTP{method: "GET", path: "/v1/jobs/" + j.ID}); o.ok {
				b, _ := json.Marshal(o.value)
				json.Unmarshal(b, &j)
			}
		}
		if j.State != server.JobDone {
			return outcome{msg: j.Error}
		}
		data = j.Result
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return outcome{msg: fmt.Sprintf("undecodable %q", data)}
	}
	return outcome{ok: true, value: v}
}

func mcpOutcome(t *testing.T, cs *mcp.ClientSession, c *parityMCP) outcome {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
	if err != nil {
		return outcome{msg: "protocol error: " + err.Error()}
	}
	if res.IsError {
		var msg strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				msg.WriteString(tc.Text)
			}
		}
		return outcome{msg: msg.String()}
	}
	v, err := decoded(res.StructuredContent)
	if err != nil {
		return outcome{msg: err.Error()}
	}
	return outcome{ok: true, value: v}
}

// serverPrefix starts a message the CLI relays from a server.
var serverPrefix = regexp.MustCompile(`^server https?://\S+: `)

func cliOutcome(t *testing.T, dir string, st parityStep) outcome {
	t.Helper()
	out, errOut, code := memctl(t, dir, st.stdin, append([]string{"--json"}, st.cli...)...)
	if code != exitOK {
		msg := strings.TrimPrefix(strings.TrimSpace(errOut), "memctl: ")
		return outcome{msg: serverPrefix.ReplaceAllString(msg, ""), status: -code}
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return outcome{msg: fmt.Sprintf("undecodable output %q", out)}
	}
	if st.cliAnswer != nil {
		a, err := st.cliAnswer(v)
		if err != nil {
			return outcome{msg: err.Error()}
		}
		v = a
	}
	return outcome{ok: true, value: v}
}

// normalize rewrites what differs between doors for reasons other than the
// request: new memories' IDs, times after the test began (now, now + the
// retention), float rounding, storage figures that depend on each process's
// flushes, directories and cleanup batches.
func normalize(v any, key string, began time.Time) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			switch {
			case k == "backend" || k == "before" || k == "after":
				x[k] = "<storage figures>"
			case k == "dir" || (k == "batch" && val != ""):
				x[k] = "<" + k + ">"
			default:
				x[k] = normalize(val, k, began)
			}
		}
	case []any:
		for i := range x {
			x[i] = normalize(x[i], key, began)
		}
	case string:
		if (key == "id" || key == "ids") && !slices.Contains(parityKnownIDs, x) {
			return "<new id>"
		}
		if at, err := time.Parse(time.RFC3339Nano, x); err == nil && at.After(began) {
			return "<since the test began>"
		}
	case float64:
		return math.Round(x*1e4) / 1e4
	}
	return v
}

func TestParity(t *testing.T) {
	isolate(t)
	began := time.Now().Add(-time.Minute)
	when := time.Now().Add(-10 * 24 * time.Hour).UTC().Truncate(time.Second)
	seed := paritySeed(t, when)
	copyOf := func(name string) string {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.CopyFS(dir, os.DirFS(seed)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	// The library: the request layer on a store this process opens as memctl does.
	lib := &app{dir: copyOf("lib"), stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	s, err := lib.openStore()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lib.close() })
	local := lib.local(s)
	ctx := api.WithCaller(context.Background(), api.LocalCaller)
	// HTTP, MCP and memctl through a server: each a memctl serve of its own copy.
	httpURL, _ := startServe(t, copyOf("http"))
	mcpURL, _ := startServe(t, copyOf("mcp"))
	cliServed := copyOf("cli-server")
	startServe(t, cliServed)
	cliLocal := copyOf("cli")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "parity", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: mcpURL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	steps := paritySteps(when)
	for _, st := range steps {
		want := libOutcome(ctx, local, st)
		want.value = normalize(want.value, "", began)
		doors := map[string]outcome{"http": httpOutcome(t, httpURL, st.http)}
		if st.mcp != nil {
			doors["mcp"] = mcpOutcome(t, cs, st.mcp)
		} else if st.noMCP == "" {
			t.Errorf("%s: no tool and no reason why (noMCP)", st.name)
		}
		if st.cli != nil {
			doors["memctl"] = cliOutcome(t, cliLocal, st)
			doors["memctl through the server"] = cliOutcome(t, cliServed, st)
		} else if st.noCLI == "" {
			t.Errorf("%s: no command and no reason why (noCLI)", st.name)
		}
		if st.cliState != nil {
			mustRun(t, cliLocal, "", st.cliState...)
			mustRun(t, cliServed, "", st.cliState...)
		}
		for door, got := range doors {
			got.value = normalize(got.value, "", began)
			same := got.ok == want.ok && reflect.DeepEqual(got.value, want.value) && (got.ok || got.msg == want.msg)
			if door == "http" && !got.ok && got.status != want.status {
				same = false
			}
			if !same {
				t.Errorf("%s: %s answered\n%v\nthe library answered\n%v", st.name, door, got, want)
			}
		}
	}

	// Every route and tool is a step, or outside the layer for a stated reason.
	h, err := server.New(server.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	routes := h.Routes()
	covered := map[string]bool{}
	for _, st := range steps {
		if !slices.Contains(routes, st.route) {
			t.Errorf("step %q exercises %q, which is no route", st.name, st.route)
		}
		covered[st.route] = true
	}
	for _, r := range routes {
		if _, ok := parityOutside[r]; !covered[r] && !ok {
			t.Errorf("route %q has no parity step (add one to paritySteps, or its reason to parityOutside)", r)
		}
	}
	for r := range parityOutside {
		if !slices.Contains(routes, r) {
			t.Errorf("parityOutside names %q, which is no route", r)
		}
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if !slices.ContainsFunc(steps, func(st parityStep) bool { return st.mcp != nil && st.mcp.tool == tool.Name }) {
			t.Errorf("MCP tool %q has no parity step", tool.Name)
		}
	}
}
