package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestForgetRestoreCommands: `memctl forget` keeps the memory restorable, `memctl forgotten`
// lists it, `memctl restore` brings back the same ID and text, and `forget --purge` deletes for
// good; the same on a closed store and through the server that holds it.
func TestForgetRestoreCommands(t *testing.T) {
	isolate(t)
	for _, served := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "store")
		out := mustRun(t, dir, "", "remember", "--json", "--session", "alice", "--tag", "car", "Alice parks on level 3.")
		var rem []struct{ ID string }
		if err := json.Unmarshal([]byte(out), &rem); err != nil || len(rem) != 1 {
			t.Fatalf("remember: %q %v", out, err)
		}
		id := rem[0].ID
		url := ""
		if served {
			u, stop := startServe(t, dir)
			defer stop()
			url = u
		}
		// isLive reads the memory back, from the store or through the server holding it.
		isLive := func() bool {
			if !served {
				_, _, code := memctl(t, dir, "", "get", id)
				return code == exitOK
			}
			resp, err := http.Get(url + "/v1/memories/" + id)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
		if out := mustRun(t, dir, "", "forget", id); !strings.Contains(out, "forgot 1 memories (restorable") {
			t.Fatalf("served=%v forget: %q", served, out)
		}
		if isLive() {
			t.Fatalf("served=%v: the memory is live after forget", served)
		}
		if out := mustRun(t, dir, "", "forgotten"); !strings.Contains(out, id) || !strings.Contains(out, "Alice parks") {
			t.Fatalf("served=%v forgotten: %q", served, out)
		}
		if _, errOut, code := memctl(t, dir, "", "restore", id, "no-such-id"); code == exitOK || !strings.Contains(errOut, "no-such-id") {
			t.Fatalf("served=%v restore of an unknown ID: exit %d %q", served, code, errOut)
		}
		if out := mustRun(t, dir, "", "restore", id); out != "restored 1 memories\n" {
			t.Fatalf("served=%v restore: %q", served, out)
		}
		if out := mustRun(t, dir, "", "forgotten"); !strings.Contains(out, "(nothing forgotten)") {
			t.Fatalf("served=%v forgotten after restore: %q", served, out)
		}
		if !isLive() {
			t.Fatalf("served=%v: the memory is not live after restore", served)
		}
		mustRun(t, dir, "", "forget", id)
		if out := mustRun(t, dir, "", "forget", "--purge", id); out != "purged 1 memories for good\n" {
			t.Fatalf("served=%v forget --purge: %q", served, out)
		}
		if _, _, code := memctl(t, dir, "", "restore", id); code == exitOK {
			t.Fatalf("served=%v restore after purge succeeded", served)
		}
		// --forget-retention 0: forgetting is final.
		if !served {
			mustRun(t, dir, "", "remember", "--session", "bob", "Bob is final.")
			if out := mustRun(t, dir, "", "--forget-retention", "0", "forget", "--session", "bob", "--all"); out != "forgot 1 memories\n" {
				t.Fatalf("forget with retention 0: %q", out)
			}
			if out := mustRun(t, dir, "", "forgotten"); !strings.Contains(out, "(nothing forgotten)") {
				t.Fatalf("forgotten after a final forget: %q", out)
			}
		}
	}
}
