package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/server"
)

func TestKeysCommands(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	keys := filepath.Join(t.TempDir(), "keys.json")
	out, errOut, code := memctl(t, dir, "", "keys", "add", "alice", "--keys", keys, "--sessions", "alice,alice-*", "--rights", "read,write")
	if code != exitOK {
		t.Fatalf("keys add: %d %s", code, errOut)
	}
	secret := strings.TrimSpace(out)
	if !strings.HasPrefix(secret, server.KeyPrefix) || strings.Contains(errOut, secret) {
		t.Fatalf("keys add printed %q / %q", out, errOut)
	}
	if st, _ := os.Stat(keys); st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", st.Mode().Perm())
	}
	if data, _ := os.ReadFile(keys); strings.Contains(string(data), secret) {
		t.Fatal("the key file holds the key")
	}
	if _, _, code := memctl(t, dir, "", "keys", "add", "alice", "--keys", keys, "--sessions", "x"); code != exitFailed {
		t.Fatalf("a duplicate name: exit %d", code)
	}
	if _, _, code := memctl(t, dir, "", "keys", "add", "bob", "--keys", keys); code != exitUsage {
		t.Fatalf("no --sessions: exit %d", code)
	}
	if _, _, code := memctl(t, dir, "", "keys", "add", "bob", "--keys", keys, "--sessions", "bob", "--rights", "root"); code != exitUsage {
		t.Fatalf("an unknown right: exit %d", code)
	}
	list := mustRun(t, dir, "", "keys", "list", "--keys", keys)
	if !strings.Contains(list, "alice") || !strings.Contains(list, "alice,alice-*") || !strings.Contains(list, "read,write") || strings.Contains(list, "sha256") {
		t.Fatalf("keys list:\n%s", list)
	}
	var js struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "keys", "list", "--json", "--keys", keys)), &js); err != nil || len(js.Keys) != 1 || js.Keys[0]["hash"] != nil {
		t.Fatalf("keys list --json = %+v, %v", js, err)
	}
	mustRun(t, dir, "", "keys", "revoke", "alice", "--keys", keys)
	if _, _, code := memctl(t, dir, "", "keys", "revoke", "alice", "--keys", keys); code != exitFailed {
		t.Fatalf("revoking twice: exit %d", code)
	}
	if list := mustRun(t, dir, "", "keys", "list", "--keys", keys); !strings.Contains(list, "no keys") {
		t.Fatalf("after revoke: %s", list)
	}
}
