package server

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzHandlers sends random methods, paths, headers and bodies to the
// handler (keys on, a scoped key and an admin key, a seeded store): it must
// never panic and never answer 5xx, as no storage fault is injected here.
// Headers are "Name: value" lines; "@alice" and "@admin" in them stand for
// those keys' secrets so the fuzzer gets past authentication.
func FuzzHandlers(f *testing.F) {
	keysFile := filepath.Join(f.TempDir(), "keys.json")
	alice, err := AddKey(keysFile, "alice", Scope{"alice", "team-*"}, RightRead|RightWrite)
	if err != nil {
		f.Fatal(err)
	}
	admin, err := AddKey(keysFile, "admin", Scope{"*"}, AllRights)
	if err != nil {
		f.Fatal(err)
	}
	store := newStore(f) // on disk: the in-memory backend refuses flush and backups
	targets := seed(f, store, []string{"alice", "bob", "team-x"})
	h, err := New(Options{Store: store, KeysFile: keysFile, MaxBodyBytes: 64 << 10, RequestTimeout: 5 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	for _, probes := range routeProbes {
		for _, p := range probes {
			for _, who := range []string{"@alice", "@admin"} {
				for _, sess := range []string{"alice", "bob"} {
					tg := targets[sess]
					headers := "Authorization: Bearer " + who + "\nContent-Type: application/json\nAccept: application/json, text/event-stream"
					f.Add(p.method, tg.fill(p.path, true), headers, []byte(tg.fill(p.body, false)))
				}
			}
		}
	}
	f.Add("POST", "/v1/forget", "Content-Type: text/plain\nOrigin: http://evil.example", []byte(`{"session":"bob","all":true}`))
	f.Add("GET", "/v1/sessions", "Host: rebind.evil.example\nAuthorization: Bearer @admin", []byte(nil))
	f.Add("POST", "/v1/recall", "Authorization: bearer @alice\nContent-Type: application/json; charset=utf-8", []byte(`{"query":"🎉","all_sessions":true,"fusion":"weighted","vector_weight":1e308}`))
	f.Add("PATCH", "/v1/tasks/%2e%2e", "Authorization: Bearer @admin\nContent-Type: application/json", []byte(`{"x":`))
	f.Add("GET", "/v1/sessions/%ff/context", "Authorization: Bearer @alice", []byte(nil))
	f.Add("POST", "/v1/remember", "Authorization: Bearer @alice\nContent-Type: application/json",
		[]byte(`{"user_id":"alice","run_id":"r","text":"x","metadata":{"run_id":{"x":[1]}}}`))
	f.Add("POST", "/v1/remember", "Authorization: Bearer @alice\nContent-Type: application/json",
		[]byte(`{"agent_id":"alice","messages":[{"role":"user","text":"I like tea.","time":"1969-01-01T00:00:00Z"}],"infer":true}`))
	f.Add("POST", "/v1/recall", "Authorization: Bearer @admin\nContent-Type: application/json",
		[]byte(`{"user_id":"alice","query":"tea","as_of":"99999d","min_score":0,"min_relative":1,"superseded":"hide"}`))
	f.Fuzz(func(t *testing.T, method, path, headers string, body []byte) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequest(method, "http://127.0.0.1:7077"+path, bytes.NewReader(body))
		if err != nil {
			return // not a request a client can send
		}
		sc := bufio.NewScanner(strings.NewReader(headers))
		for sc.Scan() {
			name, value, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			value = strings.NewReplacer("@alice", alice, "@admin", admin).Replace(strings.TrimSpace(value))
			if strings.EqualFold(strings.TrimSpace(name), "Host") {
				req.Host = value
				continue
			}
			req.Header.Add(strings.TrimSpace(name), value)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s with %q and body %q: %d %s", method, path, headers, body, rec.Code, rec.Body.String())
		}
		if strings.Contains(rec.Body.String(), alice) || strings.Contains(rec.Body.String(), admin) {
			t.Fatalf("%s %s: the answer holds a key", method, path)
		}
	})
}
