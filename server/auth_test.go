package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"alice", "alice", true},
		{"alice", "alice2", false},
		{"alice", "Alice", false},
		{"*", "", true},
		{"*", "anything/at/all", true},
		{"team-*", "team-", true},
		{"team-*", "team-a/notes", true},
		{"team-*", "team", false},
		{"team-*", "xteam-a", false},
		{"*-notes", "bob-notes", true},
		{"*-notes", "bob-notes2", false},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"user-?", "user-1", true},
		{"user-?", "user-12", false},
		{"用户?", "用户甲", true},
		{`lit\*`, "lit*", true},
		{`lit\*`, "litX", false},
		{`lit\?x`, "lit?x", true},
		{"**", "x", true},
	} {
		if got := globMatch(tc.pattern, tc.name); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestRightsParseAndJSON(t *testing.T) {
	rs, err := ParseRights("read, write", "admin")
	if err != nil || rs != AllRights {
		t.Fatalf("ParseRights = %v, %v", rs, err)
	}
	if _, err := ParseRights("root"); err == nil {
		t.Fatal("unknown right accepted")
	}
	data, _ := json.Marshal(RightRead | RightAdmin)
	if string(data) != `["read","admin"]` {
		t.Fatalf("json = %s", data)
	}
	var back Right
	if err := json.Unmarshal(data, &back); err != nil || back != RightRead|RightAdmin {
		t.Fatalf("round trip = %v, %v", back, err)
	}
}

func TestKeyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	path := filepath.Join(dir, "keys.json")
	secret, err := AddKey(path, "alice", Scope{"alice", "alice-*"}, RightRead|RightWrite)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, KeyPrefix) || len(secret) != len(KeyPrefix)+43 {
		t.Fatalf("secret %q: want %s and 43 base64url characters (256 bits)", secret, KeyPrefix)
	}
	st, _ := os.Stat(path)
	dst, _ := os.Stat(dir)
	if st.Mode().Perm() != 0o600 || dst.Mode().Perm() != 0o700 {
		t.Fatalf("modes: file %v, dir %v", st.Mode().Perm(), dst.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), secret) || strings.Contains(string(data), secret[len(KeyPrefix):]) {
		t.Fatal("the key file holds the secret itself")
	}
	if !strings.Contains(string(data), HashKey(secret)) {
		t.Fatalf("the key file lacks the hash: %s", data)
	}
	if _, err := AddKey(path, "alice", Scope{"x"}, RightRead); err == nil {
		t.Fatal("a second key named alice was added")
	}
	if _, err := AddKey(path, "boss", Scope{"team-*"}, RightAdmin); err == nil {
		t.Fatal("an admin key with a partial scope was added")
	}
	if _, err := AddKey(path, "bad name", Scope{"*"}, RightRead); err == nil {
		t.Fatal("a key name with a space was added")
	}
	if _, err := AddKey(path, "none", nil, RightRead); err == nil {
		t.Fatal("a key without sessions was added")
	}
	if _, err := AddKey(path, "bob", Scope{"bob"}, RightRead); err != nil {
		t.Fatal(err)
	}
	kf, err := ReadKeyFile(path)
	if err != nil || len(kf.Keys) != 2 || kf.Keys[0].Name != "alice" || kf.Keys[1].Rights != RightRead {
		t.Fatalf("ReadKeyFile = %+v, %v", kf, err)
	}
	if err := RevokeKey(path, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := RevokeKey(path, "alice"); err == nil {
		t.Fatal("revoking a missing key succeeded")
	}
	if kf, _ := ReadKeyFile(path); len(kf.Keys) != 1 || kf.Keys[0].Name != "bob" {
		t.Fatalf("after revoke: %+v", kf)
	}
	os.Chmod(path, 0o644)
	if _, err := ReadKeyFile(path); !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable key file: %v", err)
	}
	for name, body := range map[string]string{
		"garbage":       "not json",
		"version":       `{"version":9,"keys":[]}`,
		"unknown field": `{"version":1,"keys":[],"extra":1}`,
		"bad hash":      `{"version":1,"keys":[{"name":"a","hash":"md5:00","sessions":["*"],"rights":["read"]}]}`,
		"no rights":     `{"version":1,"keys":[{"name":"a","hash":"sha256:` + strings.Repeat("0", 64) + `","sessions":["*"],"rights":[]}]}`,
		"dup":           `{"version":1,"keys":[{"name":"a","hash":"sha256:` + strings.Repeat("0", 64) + `","sessions":["*"],"rights":["read"]},{"name":"a","hash":"sha256:` + strings.Repeat("1", 64) + `","sessions":["*"],"rights":["read"]}]}`,
	} {
		p := filepath.Join(t.TempDir(), "k.json")
		os.WriteFile(p, []byte(body), 0o600)
		if _, err := ReadKeyFile(p); !errors.Is(err, ErrKeyFile) {
			t.Errorf("%s: ReadKeyFile = %v, want ErrKeyFile", name, err)
		}
		if _, err := New(Options{Store: newStore(t), KeysFile: p}); err == nil {
			t.Errorf("%s: New accepted the key file", name)
		}
	}
}

func TestSecretBits(t *testing.T) {
	for _, tc := range []struct {
		secret string
		strong bool
	}{
		{"hunter2", false},
		{"correct-horse", false},
		{strings.Repeat("a", 200), false},
		{"0123456789abcdef0123456789abcdef", true}, // 32 hex digits = 128 bits
		{"0123456789abcdef0123456789abcde", false},
		{"Xq3v9LmZ2pR7tK1wB8nC4yH6", true},
	} {
		secret, _ := NewKeySecret()
		if got := SecretBits(tc.secret) >= MinRemoteSecretBits; got != tc.strong {
			t.Errorf("SecretBits(%q) = %.1f, strong %v, want %v", tc.secret, SecretBits(tc.secret), got, tc.strong)
		}
		if SecretBits(secret) < MinRemoteSecretBits {
			t.Errorf("a generated key %q scores %.1f bits", secret, SecretBits(secret))
		}
	}
}

// keyedServer is a test server with a key file holding the given keys
// (name -> scope, rights); it returns the secrets by name.
func keyedServer(t *testing.T, keys map[string]struct {
	scope  Scope
	rights Right
}) (*testServer, map[string]string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.json")
	secrets := map[string]string{}
	for name, k := range keys {
		secret, err := AddKey(path, name, k.scope, k.rights)
		if err != nil {
			t.Fatal(err)
		}
		secrets[name] = secret
	}
	return newTestServer(t, Options{KeysFile: path}), secrets, path
}

// as returns a copy of s that sends secret as its bearer key.
func (s *testServer) as(secret string) *testServer {
	c := *s
	c.token = secret
	return &c
}

type keySpec = struct {
	scope  Scope
	rights Right
}

// TestKeysAndScopes reproduces the one-key-for-everything problem: with
// keys, each client reaches only its sessions with its rights, over every
// kind of route.
func TestKeysAndScopes(t *testing.T) {
	s, sec, path := keyedServer(t, map[string]keySpec{
		"admin":   {Scope{"*"}, AllRights},
		"alice":   {Scope{"alice"}, RightRead | RightWrite},
		"team":    {Scope{"team-*"}, RightRead},
		"scribe":  {Scope{"alice"}, RightWrite},
		"watcher": {Scope{"*"}, RightRead},
	})
	admin, alice, team, scribe, watcher := s.as(sec["admin"]), s.as(sec["alice"]), s.as(sec["team"]), s.as(sec["scribe"]), s.as(sec["watcher"])
	ids := map[string]string{}
	for _, sess := range []string{"alice", "bob", "team-a", "team-b"} {
		var rem RememberResponse
		if code := admin.do("POST", "/v1/remember", RememberRequest{Session: sess, Text: sess + " likes green tea"}, &rem); code != 200 {
			t.Fatalf("seed %s: %d", sess, code)
		}
		ids[sess] = rem.IDs[0]
	}
	if code := s.as("").do("GET", "/v1/sessions", nil, nil); code != 401 {
		t.Fatalf("no key: %d", code)
	}
	if code := s.as(sec["alice"]+"x").do("GET", "/v1/sessions", nil, nil); code != 401 {
		t.Fatalf("wrong key: %d", code)
	}
	recallAll := func(c *testServer) []string {
		var rec RecallResponse
		if code := c.do("POST", "/v1/recall", RecallRequest{Query: "green tea", AllSessions: true, K: 10}, &rec); code != 200 {
			t.Fatalf("recall all: %d", code)
		}
		var out []string
		for _, r := range rec.Results {
			out = append(out, r.Session)
		}
		return sorted(out)
	}
	sessions := func(c *testServer) []string {
		var ss struct{ Sessions []SessionJSON }
		if code := c.do("GET", "/v1/sessions", nil, &ss); code != 200 {
			t.Fatalf("sessions: %d", code)
		}
		var out []string
		for _, s := range ss.Sessions {
			out = append(out, s.Name)
		}
		return out
	}
	for _, tc := range []struct {
		c    *testServer
		want string
	}{{admin, "alice bob team-a team-b"}, {alice, "alice"}, {team, "team-a team-b"}, {watcher, "alice bob team-a team-b"}} {
		if got := strings.Join(recallAll(tc.c), " "); got != tc.want {
			t.Errorf("recall all_sessions as %s = %q, want %q", tc.c.token[:12], got, tc.want)
		}
		if got := strings.Join(sessions(tc.c), " "); got != tc.want {
			t.Errorf("sessions = %q, want %q", got, tc.want)
		}
	}
	bob := "bob"
	for _, tc := range []struct {
		name         string
		c            *testServer
		method, path string
		body         any
		want         int
	}{
		{"alice remembers for alice", alice, "POST", "/v1/remember", RememberRequest{Session: "alice", Text: "x"}, 200},
		{"alice remembers for bob", alice, "POST", "/v1/remember", RememberRequest{Session: "bob", Text: "x"}, 403},
		{"alice recalls bob", alice, "POST", "/v1/recall", RecallRequest{Session: "bob", Query: "tea"}, 403},
		{"alice forgets all of bob", alice, "POST", "/v1/forget", ForgetRequest{Session: &bob, All: true}, 403},
		{"alice reads bob's context", alice, "GET", "/v1/sessions/bob/context", nil, 403},
		{"alice adds a turn to bob", alice, "POST", "/v1/sessions/bob/turns", map[string]string{"role": "user", "text": "hi"}, 403},
		{"alice clears bob", alice, "DELETE", "/v1/sessions/bob/context", nil, 403},
		{"alice adds a turn to alice", alice, "POST", "/v1/sessions/alice/turns", map[string]string{"role": "user", "text": "hi"}, 200},
		{"alice stats", alice, "GET", "/v1/stats", nil, 403},
		{"alice metrics", alice, "GET", "/metrics", nil, 403},
		{"team writes", team, "POST", "/v1/remember", RememberRequest{Session: "team-a", Text: "x"}, 403},
		{"team recalls team-b", team, "POST", "/v1/recall", RecallRequest{Session: "team-b", Query: "tea"}, 200},
		{"scribe recalls alice", scribe, "POST", "/v1/recall", RecallRequest{Session: "alice", Query: "tea"}, 403},
		{"scribe remembers alice", scribe, "POST", "/v1/remember", RememberRequest{Session: "alice", Text: "y"}, 200},
		{"watcher forgets", watcher, "POST", "/v1/forget", ForgetRequest{IDs: []string{ids["bob"]}}, 403},
		{"admin stats", admin, "GET", "/v1/stats", nil, 200},
		{"admin metrics", admin, "GET", "/metrics", nil, 200},
		{"alice task for bob", alice, "POST", "/v1/tasks", StartTaskRequest{ID: "tb", Session: "bob", Goal: "g"}, 403},
		{"alice task without session", alice, "POST", "/v1/tasks", StartTaskRequest{ID: "tn", Goal: "g"}, 403},
		{"admin task for bob", admin, "POST", "/v1/tasks", StartTaskRequest{ID: "bobs", Session: "bob", Goal: "g"}, 201},
		{"alice task for alice", alice, "POST", "/v1/tasks", StartTaskRequest{ID: "alices", Session: "alice", Goal: "g"}, 201},
		{"alice gets bob's task", alice, "GET", "/v1/tasks/bobs", nil, 404},
		{"alice steps bob's task", alice, "POST", "/v1/tasks/bobs/steps", StepRequest{Name: "s", Status: "done"}, 404},
		{"alice finishes bob's task", alice, "POST", "/v1/tasks/bobs/finish", map[string]string{}, 404},
		{"alice deletes bob's task", alice, "DELETE", "/v1/tasks/bobs", nil, 404},
		{"alice steps her task", alice, "POST", "/v1/tasks/alices/steps", StepRequest{Name: "s", Status: "done"}, 200},
		{"team gets alice's task", team, "GET", "/v1/tasks/alices", nil, 404},
	} {
		if code := tc.c.do(tc.method, tc.path, tc.body, nil); code != tc.want {
			t.Errorf("%s: %s %s = %d, want %d", tc.name, tc.method, tc.path, code, tc.want)
		}
	}
	// Forgetting another session's memory by ID acts as if it did not exist: 404 naming it, and
	// nothing is deleted (not even alice's own, named in the same request).
	if code := alice.do("POST", "/v1/forget", ForgetRequest{IDs: []string{ids["bob"], ids["alice"]}}, nil); code != 404 {
		t.Fatalf("alice forgets bob's and her own: %d, want 404", code)
	}
	if ms, _ := s.store.Get(context.Background(), ids["bob"], ids["alice"]); len(ms) != 2 {
		t.Fatal("a refused forget deleted memories")
	}
	var forgot ForgetResponse
	if code := alice.do("POST", "/v1/forget", ForgetRequest{IDs: []string{ids["alice"]}}, &forgot); code != 200 || forgot.Forgotten != 1 {
		t.Fatalf("alice forgets her own: %d %v", code, forgot)
	}
	if ms, _ := s.store.Get(context.Background(), ids["bob"]); len(ms) != 1 {
		t.Fatal("alice's key forgot bob's memory")
	}
	var tasks struct{ Tasks []struct{ ID string } }
	alice.do("GET", "/v1/tasks", nil, &tasks)
	if len(tasks.Tasks) != 1 || tasks.Tasks[0].ID != "alices" {
		t.Fatalf("alice's task list = %+v", tasks)
	}
	admin.do("GET", "/v1/tasks", nil, &tasks)
	if len(tasks.Tasks) != 2 {
		t.Fatalf("admin's task list = %+v", tasks)
	}
	// Revoking a key takes effect on the running server.
	if err := RevokeKey(path, "alice"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * KeyReloadInterval)
	for alice.do("GET", "/v1/sessions", nil, nil) != 401 {
		if time.Now().After(deadline) {
			t.Fatal("a revoked key is still accepted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := team.do("GET", "/v1/sessions", nil, nil); code != 200 {
		t.Fatalf("another key after the revoke: %d", code)
	}
}

func sorted(xs []string) []string {
	out := append([]string(nil), xs...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// bearerTransport adds a bearer key to every request.
type bearerTransport struct{ secret string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.secret)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpAs connects an MCP client to s with the given key.
func mcpAs(t *testing.T, s *testServer, secret string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: s.url + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerTransport{secret}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestMCPScopes(t *testing.T) {
	s, sec, _ := keyedServer(t, map[string]keySpec{
		"admin":  {Scope{"*"}, AllRights},
		"alice":  {Scope{"alice"}, RightRead | RightWrite},
		"reader": {Scope{"alice"}, RightRead},
	})
	var bobRem RememberResponse
	s.as(sec["admin"]).do("POST", "/v1/remember", RememberRequest{Session: "bob", Text: "Bob's PIN is 1234"}, &bobRem)
	alice := mcpAs(t, s, sec["alice"])
	call := func(cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := call(alice, "recall", map[string]any{"session": "bob", "query": "PIN"}); !res.IsError || strings.Contains(toolText(res), "1234") {
		t.Fatalf("alice recalled bob: %s", toolText(res))
	}
	if res := call(alice, "remember", map[string]any{"session": "bob", "text": "planted"}); !res.IsError {
		t.Fatal("alice remembered for bob")
	}
	if res := call(alice, "forget", map[string]any{"ids": bobRem.IDs}); !res.IsError || !strings.Contains(toolText(res), bobRem.IDs[0]) {
		t.Fatalf("alice forgetting bob's memory: %s", toolText(res))
	}
	if res := call(alice, "get", map[string]any{"id": bobRem.IDs[0]}); !res.IsError || strings.Contains(toolText(res), "1234") {
		t.Fatalf("alice got bob's memory: %s", toolText(res))
	}
	if res := call(alice, "history", map[string]any{"id": bobRem.IDs[0]}); !res.IsError {
		t.Fatalf("alice read bob's history: %s", toolText(res))
	}
	if res := call(alice, "delete", map[string]any{"id": bobRem.IDs[0]}); !res.IsError {
		t.Fatalf("alice deleted bob's memory: %s", toolText(res))
	}
	if res := call(alice, "list", map[string]any{"session": "bob"}); !res.IsError {
		t.Fatalf("alice listed bob: %s", toolText(res))
	}
	if res := call(alice, "remember", map[string]any{"session": "alice", "text": "Alice's cat is Tom"}); res.IsError {
		t.Fatalf("alice remembering for alice: %s", toolText(res))
	}
	reader := mcpAs(t, s, sec["reader"])
	if res := call(reader, "recall", map[string]any{"session": "alice", "query": "cat"}); res.IsError || !strings.Contains(toolText(res), "Tom") {
		t.Fatalf("reader recalling alice: %s", toolText(res))
	}
	if res := call(reader, "remember", map[string]any{"session": "alice", "text": "x"}); !res.IsError {
		t.Fatal("a read-only key remembered")
	}
	if n, _ := s.store.Count(context.Background(), nil); n != 2 {
		t.Fatalf("%d memories, want bob's and alice's", n)
	}
}

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		b.Write(data)
	}
	return b.String()
}

// TestKeyFileAppears: a server started before its key file exists
// (KeysFileMayAppear, memctl serve's default key file) enforces the file
// from the first request after it appears, logs that, and never goes back
// to serving without keys: a file that cannot be used accepts no key, and
// deleting the file revokes its keys (issue 23: keys added to a running
// keyless server were not enforced until a restart).
func TestKeyFileAppears(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cfg", "keys.json")
	if _, err := New(Options{Store: newStore(t), KeysFile: path}); err == nil {
		t.Fatal("New accepted a missing key file without KeysFileMayAppear")
	}
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	s := newTestServer(t, Options{KeysFile: path, KeysFileMayAppear: true, Logger: logger})
	if code := s.as("engram_bogus").do("GET", "/v1/sessions", nil, nil); code != 200 {
		t.Fatalf("before the key file: %d, want the open loopback service", code)
	}
	alice, err := AddKey(path, "alice", Scope{"alice", "alice-*"}, RightRead|RightWrite)
	if err != nil {
		t.Fatal(err)
	}
	// No waiting: the very next request needs a key.
	for _, p := range []struct {
		name, key, method, path string
		body                    any
		want                    int
	}{
		{"a bogus key", "engram_bogus", "GET", "/v1/sessions", nil, 401},
		{"no key", "", "GET", "/v1/sessions", nil, 401},
		{"alice recalls bob", alice, "POST", "/v1/recall", RecallRequest{Session: "bob", Query: "tea"}, 403},
		{"alice on admin stats", alice, "GET", "/v1/admin/stats", nil, 403},
		{"alice remembers", alice, "POST", "/v1/remember", RememberRequest{Session: "alice-notes", Text: "tea"}, 200},
	} {
		if code := s.as(p.key).do(p.method, p.path, p.body, nil); code != p.want {
			t.Errorf("%s: %d, want %d", p.name, code, p.want)
		}
	}
	if !strings.Contains(logs.String(), "key file appeared: its keys are enforced from now on") {
		t.Errorf("the switch is not logged:\n%s", logs.String())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(KeyReloadInterval + 100*time.Millisecond)
	for _, key := range []string{alice, ""} {
		if code := s.as(key).do("GET", "/v1/sessions", nil, nil); code != 401 {
			t.Errorf("key %q after the key file was deleted: %d, want 401", key, code)
		}
	}
	if !strings.Contains(logs.String(), "every key in it is revoked") {
		t.Errorf("the deletion is not logged:\n%s", logs.String())
	}

	// A key file that appears unusable (readable by others) accepts no
	// key, and nobody gets in without one, until it is fixed.
	path2 := filepath.Join(t.TempDir(), "keys.json")
	token := "0123456789abcdef0123456789abcdef"
	logs2 := new(syncBuffer)
	s2 := newTestServer(t, Options{KeysFile: path2, KeysFileMayAppear: true, Token: token, Logger: slog.New(slog.NewTextHandler(logs2, nil))})
	if code := s2.as("").do("GET", "/v1/sessions", nil, nil); code != 401 {
		t.Fatalf("a token and an awaited key file, no key: %d", code)
	}
	bob, err := AddKey(path2, "bob", Scope{"bob"}, RightRead)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path2, 0o644)
	for _, key := range []string{bob, "", "engram_bogus"} {
		if code := s2.as(key).do("GET", "/v1/sessions", nil, nil); code != 401 {
			t.Errorf("an unusable key file, key %q: %d, want 401", key, code)
		}
	}
	if code := s2.do("GET", "/v1/sessions", nil, nil); code != 200 {
		t.Errorf("the token beside an unusable key file: %d", code)
	}
	if !strings.Contains(logs2.String(), "cannot be used") {
		t.Errorf("the unusable key file is not logged:\n%s", logs2.String())
	}
	os.Chmod(path2, 0o600)
	time.Sleep(KeyReloadInterval + 100*time.Millisecond)
	if code := s2.as(bob).do("GET", "/v1/sessions", nil, nil); code != 200 {
		t.Errorf("bob once the key file is fixed: %d", code)
	}

	// Beyond loopback an awaited key file is no key at all.
	h, err := New(Options{Store: newStore(t), KeysFile: filepath.Join(t.TempDir(), "none.json"), KeysFileMayAppear: true, InsecureHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ListenAndServe(context.Background(), "0.0.0.0:0", h, time.Second, nil); !errors.Is(err, ErrTokenRequired) {
		t.Errorf("a non-loopback bind with only an awaited key file: %v", err)
	}
}

// syncBuffer is a bytes.Buffer that a server's logger may write while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
