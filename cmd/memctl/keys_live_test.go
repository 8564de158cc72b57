package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/server"
)

// apiStatus sends one request to a running serve and returns the status.
func apiStatus(t *testing.T, base, key, method, path, body string) int {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

type probe struct {
	name, key, method, path, body string
	want                          int
}

// awaitStatuses sends the probes until every one answers its status, and
// fails when that has not happened within d.
func awaitStatuses(t *testing.T, base string, d time.Duration, probes []probe) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		var wrong []string
		for _, p := range probes {
			if got := apiStatus(t, base, p.key, p.method, p.path, p.body); got != p.want {
				wrong = append(wrong, p.name+": "+http.StatusText(got))
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, strings.Join(wrong, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKeysAddedToRunningServer reproduces issue 23: with `memctl serve`
// running without a key file (auth "none (loopback only)"), `memctl keys
// add alice --sessions 'alice,alice-*' --rights read,write` was accepted,
// and more than 10 s later the alice key still read session bob, a bogus
// bearer key read /v1/sessions and the alice key read /v1/admin/stats; only
// a restart enforced the keys. The server now enforces the key file from
// the moment it appears, and says so in its log.
func TestKeysAddedToRunningServer(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "remember", "--session", "bob", "Bob is allergic to peanuts.")
	mustRun(t, dir, "", "remember", "--session", "alice", "Alice prefers green tea.")
	url, logs, _ := startServeLogged(t, dir)
	if !strings.Contains(logs.String(), `auth="none (loopback only`) {
		t.Fatalf("serve without a key file:\n%s", logs.String())
	}
	if code := apiStatus(t, url, "engram_bogus", "GET", "/v1/sessions", ""); code != 200 {
		t.Fatalf("before any key, the open loopback service answers %d", code)
	}

	out, errOut, code := memctl(t, dir, "", "keys", "add", "alice", "--sessions", "alice,alice-*", "--rights", "read,write")
	if code != exitOK {
		t.Fatalf("keys add: exit %d: %s", code, errOut)
	}
	alice := strings.TrimSpace(out)
	bob := `{"session":"bob","query":"peanuts"}`
	awaitStatuses(t, url, time.Second, []probe{
		{"a bogus key lists sessions", "engram_bogus", "GET", "/v1/sessions", "", 401},
		{"no key lists sessions", "", "GET", "/v1/sessions", "", 401},
		{"alice recalls bob", alice, "POST", "/v1/recall", bob, 403},
		{"alice reads bob's context", alice, "GET", "/v1/sessions/bob/context", "", 403},
		{"alice reads admin stats", alice, "GET", "/v1/admin/stats", "", 403},
		{"alice recalls alice", alice, "POST", "/v1/recall", `{"session":"alice","query":"tea"}`, 200},
	})
	if !strings.Contains(logs.String(), "enforced from now on") {
		t.Errorf("the server did not log that it enforces the new key file:\n%s", logs.String())
	}

	// Deleting the key file while the server runs revokes every key in it
	// and never makes the service open again: only a restart does that.
	if err := os.Remove(defaultKeysPath()); err != nil {
		t.Fatal(err)
	}
	awaitStatuses(t, url, 3*time.Second, []probe{
		{"alice after the key file is gone", alice, "GET", "/v1/sessions", "", 401},
		{"no key after the key file is gone", "", "GET", "/v1/sessions", "", 401},
	})
	if !strings.Contains(logs.String(), "every key in it is revoked") {
		t.Errorf("the server did not log the deleted key file:\n%s", logs.String())
	}
}

// TestClientAuthErrorsSayHowToSendAKey reproduces issue 23: with keys on,
// memctl commands against a served --dir failed with "missing or wrong
// bearer key" without saying how to send one. Refusals (401, 403) now name
// ENGRAM_TOKEN and --server-token.
func TestClientAuthErrorsSayHowToSendAKey(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "remember", "--session", "bob", "Bob is allergic to peanuts.")
	keys := filepath.Join(t.TempDir(), "keys.json")
	alice, err := server.AddKey(keys, "alice", server.Scope{"alice", "alice-*"}, server.RightRead|server.RightWrite)
	if err != nil {
		t.Fatal(err)
	}
	startServe(t, dir, "--keys", keys)
	for _, tc := range []struct {
		name, key string
		args      []string
		want      string // the server's reason, which stays in the message
	}{
		{"no key", "", []string{"recall", "--session", "bob", "peanuts"}, "missing or wrong bearer key"},
		{"no key, admin command", "", []string{"stats"}, "missing or wrong bearer key"},
		{"a wrong key", "engram_bogus", []string{"sessions"}, "missing or wrong bearer key"},
		{"a session outside the key's scope", alice, []string{"recall", "--session", "bob", "peanuts"}, `outside the scope of key "alice"`},
		{"a right the key lacks", alice, []string{"stats"}, "lacks the admin right"},
	} {
		t.Setenv("ENGRAM_TOKEN", tc.key)
		_, errOut, code := memctl(t, dir, "", tc.args...)
		if code != exitFailed || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, %q; want exit 1 with %q", tc.name, code, errOut, tc.want)
			continue
		}
		for _, how := range []string{"ENGRAM_TOKEN", "--server-token"} {
			if !strings.Contains(errOut, how) {
				t.Errorf("%s: the error does not say how to send a key (%s): %q", tc.name, how, errOut)
			}
		}
		if tc.key != "" && strings.Contains(errOut, tc.key) {
			t.Errorf("%s: the error shows the key: %q", tc.name, errOut)
		}
	}
}
