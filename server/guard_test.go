package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawRequest sends one request with exactly the given headers (Host included)
// and returns the status code.
func (s *testServer) rawRequest(method, path, body string, headers map[string]string) int {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body == "" {
		req.Body = nil
		req.ContentLength = 0
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if s.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestBrowserSafeLoopback reproduces the cross-site and DNS-rebinding
// attacks a web page can mount on a loopback service without a token, and
// checks each is refused and writes or reveals nothing.
func TestBrowserSafeLoopback(t *testing.T) {
	s := newTestServer(t, Options{AllowedHosts: []string{"memory.lan"}})
	if code := s.do("POST", "/v1/remember", RememberRequest{Session: "bob", Text: "Bob's PIN is 1234."}, nil); code != 200 {
		t.Fatalf("seed: %d", code)
	}
	const jsonCT = "application/json"
	remember := `{"session":"bob","text":"planted by a web page"}`
	forgetAll := `{"session":"bob","all":true}`
	recallAll := `{"query":"PIN","all_sessions":true}`
	for _, tc := range []struct {
		name, method, path, body string
		headers                  map[string]string
		want                     int
	}{
		// CSRF: a "simple" cross-site request needs no preflight.
		{"csrf remember text/plain", "POST", "/v1/remember", remember, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403},
		{"csrf forget text/plain", "POST", "/v1/forget", forgetAll, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403},
		{"csrf forget json foreign origin", "POST", "/v1/forget", forgetAll, map[string]string{"Content-Type": jsonCT, "Origin": "http://evil.example"}, 403},
		{"null origin", "POST", "/v1/forget", forgetAll, map[string]string{"Content-Type": jsonCT, "Origin": "null"}, 403},
		{"origin lookalike", "POST", "/v1/forget", forgetAll, map[string]string{"Content-Type": jsonCT, "Origin": "http://localhost.evil.example"}, 403},
		{"form body no origin", "POST", "/v1/forget", forgetAll, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"text body no origin", "POST", "/v1/remember", remember, map[string]string{"Content-Type": "text/plain"}, 415},
		{"no content type", "POST", "/v1/remember", remember, nil, 415},
		{"multipart", "POST", "/v1/remember", remember, map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 415},
		{"text body on mcp", "POST", "/mcp", `{}`, map[string]string{"Content-Type": "text/plain"}, 415},
		// DNS rebinding: the browser sends the attacker's name as Host.
		{"rebind sessions", "GET", "/v1/sessions", "", map[string]string{"Host": "rebind.evil.example"}, 421},
		{"rebind recall", "POST", "/v1/recall", recallAll, map[string]string{"Host": "rebind.evil.example", "Content-Type": jsonCT}, 421},
		{"rebind metrics", "GET", "/metrics", "", map[string]string{"Host": "rebind.evil.example:7077"}, 421},
		{"rebind mcp", "POST", "/mcp", `{}`, map[string]string{"Host": "rebind.evil.example", "Content-Type": jsonCT}, 421},
		{"rebind unknown route", "GET", "/nope", "", map[string]string{"Host": "rebind.evil.example"}, 421},
		{"rebind localhost suffix", "GET", "/v1/sessions", "", map[string]string{"Host": "localhost.evil.example"}, 421},
		// Allowed: loopback names, the configured name, same-host origins.
		{"healthz any host", "GET", "/healthz", "", map[string]string{"Host": "rebind.evil.example"}, 200},
		{"localhost", "GET", "/v1/sessions", "", map[string]string{"Host": "localhost:7077"}, 200},
		{"localhost dot", "GET", "/v1/sessions", "", map[string]string{"Host": "LOCALHOST."}, 200},
		{"ipv6 loopback", "GET", "/v1/sessions", "", map[string]string{"Host": "[::1]:7077"}, 200},
		{"configured name", "GET", "/v1/sessions", "", map[string]string{"Host": "memory.lan:7077"}, 200},
		{"same origin", "POST", "/v1/recall", recallAll, map[string]string{"Content-Type": jsonCT, "Origin": "http://localhost:7077"}, 200},
		{"json charset", "POST", "/v1/recall", recallAll, map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200},
		{"delete without body", "DELETE", "/v1/sessions/bob/context", "", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code := s.rawRequest(tc.method, tc.path, tc.body, tc.headers); code != tc.want {
				t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, code, tc.want)
			}
		})
	}
	if n := s.count(); n != 1 {
		t.Fatalf("refused requests changed the store: %d memories, want 1", n)
	}
}

// TestGuardBoundAddress checks that a server bound to a LAN address accepts
// its own address as Host and refuses other names.
func TestGuardBoundAddress(t *testing.T) {
	h, err := New(Options{Store: newStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- ListenAndServe(ctx, "127.0.0.1:0", h, time.Second, func(a net.Addr) { ready <- a }) }()
	addr := (<-ready).String()
	s := &testServer{t: t, url: "http://" + addr}
	if code := s.rawRequest("GET", "/v1/sessions", "", map[string]string{"Host": addr}); code != 200 {
		t.Fatalf("bound address as Host: %d", code)
	}
	if code := s.rawRequest("GET", "/v1/sessions", "", map[string]string{"Host": "attacker.example"}); code != 421 {
		t.Fatalf("foreign Host: %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bound, host string
		want        bool
	}{
		{"10.0.0.5:7077", "10.0.0.5:7077", true},
		{"10.0.0.5:7077", "10.0.0.6", false},
		{"0.0.0.0:7077", "192.168.1.9:7077", true},
		{"[::]:7077", "[fe80::1]:7077", true},
		{"0.0.0.0:7077", "evil.example", false},
		{"127.0.0.1:7077", "127.0.0.2", true},
		{"127.0.0.1:7077", "", false},
	} {
		g := newGuard(nil)
		g.setBound(tc.bound)
		if got := g.hostAllowed(tc.host); got != tc.want {
			t.Errorf("bound %s, Host %q: allowed %v, want %v", tc.bound, tc.host, got, tc.want)
		}
	}
}
