package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIssueInputs replays the reported attacks with their exact inputs, on
// an open loopback server and on one with keys (a valid key does not lift
// the browser checks), /mcp included: each is refused and neither writes
// nor reveals anything.
func TestIssueInputs(t *testing.T) {
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	admin, err := AddKey(keysFile, "admin", Scope{"*"}, AllRights)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		opts Options
		key  string
	}{{"open", Options{}, ""}, {"keys", Options{KeysFile: keysFile}, admin}} {
		s := newTestServer(t, mode.opts)
		s.token = mode.key
		if code := s.do("POST", "/v1/remember", RememberRequest{Session: "bob", Text: "Bob's PIN is 4711."}, nil); code != 200 {
			t.Fatalf("%s: seed: %d", mode.name, code)
		}
		evil := map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}
		rebind := map[string]string{"Host": "rebind.evil.example"}
		rebindJSON := map[string]string{"Host": "rebind.evil.example", "Content-Type": "application/json"}
		mcpInit := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
		mcpRemember := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":{"session":"bob","text":"planted"}}}`
		for _, tc := range []struct {
			name, method, path, body string
			headers                  map[string]string
			want                     int
		}{
			{"remember text/plain from evil.example", "POST", "/v1/remember", `{"session":"bob","text":"planted"}`, evil, 403},
			{"forget all of bob text/plain from evil.example", "POST", "/v1/forget", `{"session":"bob","all":true}`, evil, 403},
			{"sessions via rebinding", "GET", "/v1/sessions", "", rebind, 421},
			{"recall all_sessions via rebinding", "POST", "/v1/recall", `{"query":"PIN","all_sessions":true}`, rebindJSON, 421},
			{"mcp via rebinding", "POST", "/mcp", mcpInit, rebindJSON, 421},
			{"mcp GET via rebinding", "GET", "/mcp", "", rebind, 421},
			{"mcp text/plain", "POST", "/mcp", mcpRemember, map[string]string{"Content-Type": "text/plain"}, 415},
			{"mcp from evil.example", "POST", "/mcp", mcpRemember, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403},
			{"mcp text/plain from evil.example", "POST", "/mcp", mcpRemember, evil, 403},
			{"mcp form", "POST", "/mcp", mcpRemember, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
			{"metrics via rebinding", "GET", "/metrics", "", rebind, 421},
			{"openapi from evil.example", "GET", "/openapi.json", "", map[string]string{"Origin": "https://evil.example"}, 403},
		} {
			code, body := s.rawRequestBody(tc.method, tc.path, tc.body, tc.headers)
			if code != tc.want {
				t.Errorf("%s: %s: %d, want %d (%s)", mode.name, tc.name, code, tc.want, body)
			}
			if strings.Contains(body, "4711") || strings.Contains(body, `"bob"`) {
				t.Errorf("%s: %s: the refusal reveals data: %s", mode.name, tc.name, body)
			}
		}
		var rec RecallResponse
		s.do("POST", "/v1/recall", RecallRequest{Query: "PIN planted", AllSessions: true, K: 10}, &rec)
		if len(rec.Results) != 1 || !strings.Contains(rec.Results[0].Text, "4711") {
			t.Fatalf("%s: after the attacks the store holds %+v", mode.name, rec.Results)
		}
	}
}

// rawRequestBody is rawRequest that also returns the body.
func (s *testServer) rawRequestBody(method, path, body string, headers map[string]string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = nil, 0
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// serveInBackground runs ListenAndServe and returns the bound address and
// a stop function that returns ListenAndServe's error.
func serveInBackground(t *testing.T, addr string, h *Handler) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- ListenAndServe(ctx, addr, h, time.Second, func(a net.Addr) { ready <- a }) }()
	select {
	case a := <-ready:
		return a.String(), func() error { cancel(); return <-done }
	case err := <-done:
		cancel()
		t.Fatalf("ListenAndServe(%s): %v", addr, err)
	}
	return "", nil
}

func TestTLS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	cfg, fp, created, err := SelfSignedTLS(dir, []string{"memory.lan", "10.1.2.3"})
	if err != nil || !created || len(fp) != 95 {
		t.Fatalf("SelfSignedTLS = %v, %q, %v", err, fp, created)
	}
	if st, _ := os.Stat(filepath.Join(dir, "key.pem")); st.Mode().Perm() != 0o600 {
		t.Fatalf("key.pem mode %v", st.Mode().Perm())
	}
	if dst, _ := os.Stat(dir); dst.Mode().Perm() != 0o700 {
		t.Fatalf("tls dir mode %v", dst.Mode().Perm())
	}
	_, fp2, created2, err := SelfSignedTLS(dir, nil)
	if err != nil || created2 || fp2 != fp {
		t.Fatalf("second SelfSignedTLS = %v, %q (want %q), created %v", err, fp2, fp, created2)
	}
	leaf, _ := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if leaf.VerifyHostname("memory.lan") != nil || leaf.VerifyHostname("10.1.2.3") != nil || leaf.VerifyHostname("localhost") != nil {
		t.Fatalf("certificate names: %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	if Fingerprint(leaf.Raw) != fp {
		t.Fatal("fingerprint is not the certificate's")
	}
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	secret, _ := AddKey(keysFile, "alice", Scope{"alice"}, RightRead|RightWrite)
	h, err := New(Options{Store: newStore(t), KeysFile: keysFile, TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := serveInBackground(t, "127.0.0.1:0", h)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	var transports []*http.Transport
	get := func(c *tls.Config, h2 bool) (*http.Response, error) {
		tr := &http.Transport{TLSClientConfig: c, ForceAttemptHTTP2: h2}
		transports = append(transports, tr)
		client := &http.Client{Timeout: 5 * time.Second, Transport: tr}
		req, _ := http.NewRequest("GET", "https://"+addr+"/v1/sessions", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		return client.Do(req)
	}
	for _, tc := range []struct {
		name    string
		cfg     *tls.Config
		h2, ok  bool
		version uint16
	}{
		{"TLS 1.3", &tls.Config{RootCAs: pool}, false, true, tls.VersionTLS13},
		{"TLS 1.2", &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12}, false, true, tls.VersionTLS12},
		{"HTTP/2", &tls.Config{RootCAs: pool}, true, true, tls.VersionTLS13},
		{"TLS 1.1 refused", &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}, false, false, 0},
		{"unknown CA refused", &tls.Config{}, false, false, 0},
		{"pinned by fingerprint", &tls.Config{InsecureSkipVerify: true, VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if Fingerprint(raw[0]) != fp {
				return errors.New("fingerprint mismatch")
			}
			return nil
		}}, false, true, tls.VersionTLS13},
	} {
		resp, err := get(tc.cfg, tc.h2)
		if !tc.ok {
			if err == nil {
				resp.Body.Close()
				t.Errorf("%s: handshake succeeded", tc.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.TLS == nil || resp.TLS.Version != tc.version || (tc.h2 && resp.ProtoMajor != 2) {
			t.Errorf("%s: status %d, TLS %+v, proto %s", tc.name, resp.StatusCode, resp.TLS != nil, resp.Proto)
		}
	}
	// Plain HTTP to the TLS port gets no data.
	if resp, err := http.Get("http://" + addr + "/v1/sessions"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP to the TLS port answered 200")
		}
	}
	for _, tr := range transports {
		tr.CloseIdleConnections()
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestListenRules: a non-loopback bind needs keys, a strong token and TLS
// (or an explicit InsecureHTTP).
func TestListenRules(t *testing.T) {
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	AddKey(keysFile, "alice", Scope{"alice"}, RightRead)
	cfg, _, _, err := SelfSignedTLS(filepath.Join(t.TempDir(), "tls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts Options
		want error
	}{
		{"no keys", Options{}, ErrTokenRequired},
		{"no keys, TLS", Options{TLS: cfg}, ErrTokenRequired},
		{"keys, no TLS", Options{KeysFile: keysFile}, ErrTLSRequired},
		{"weak token", Options{Token: "hunter2", TLS: cfg}, ErrWeakToken},
		{"keys, TLS", Options{KeysFile: keysFile, TLS: cfg}, nil},
		{"keys, insecure HTTP", Options{KeysFile: keysFile, InsecureHTTP: true}, nil},
		{"strong token, TLS", Options{Token: "0123456789abcdef0123456789abcdef", TLS: cfg}, nil},
	} {
		tc.opts.Store = newStore(t)
		h, err := New(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if tc.want != nil {
			if err := ListenAndServe(context.Background(), "0.0.0.0:0", h, time.Second, nil); !errors.Is(err, tc.want) {
				t.Errorf("%s: ListenAndServe = %v, want %v", tc.name, err, tc.want)
			}
			continue
		}
		_, stop := serveInBackground(t, "0.0.0.0:0", h)
		if err := stop(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestSecretsNeverLogged: no key or token appears in the logs, /metrics or
// any answer, whether requests succeed, fail authentication with a
// near-miss key, hit a broken key file or a failing store.
func TestSecretsNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	alice, _ := AddKey(keysFile, "alice", Scope{"alice"}, RightRead|RightWrite)
	admin, _ := AddKey(keysFile, "boss", Scope{"*"}, AllRights)
	token := "tok-0123456789abcdef0123456789abcdef"
	store := newStore(t)
	h, err := New(Options{Store: store, KeysFile: keysFile, Token: token, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPTestServer(t, h)
	var bodies strings.Builder
	send := func(secret, method, path, body string) int {
		req, _ := http.NewRequest(method, srv+path, strings.NewReader(body))
		if body == "" {
			req.Body, req.ContentLength = nil, 0
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		bodies.Write(data)
		bodies.WriteString(strings.Join(resp.Header.Values("WWW-Authenticate"), " "))
		return resp.StatusCode
	}
	for _, secret := range []string{alice, admin, token, alice[:len(alice)-1], alice + "x", strings.ToUpper(alice), token + " "} {
		send(secret, "POST", "/v1/remember", `{"session":"alice","text":"tea"}`)
		send(secret, "POST", "/v1/recall", `{"session":"bob","query":"tea"}`)
		send(secret, "GET", "/v1/stats", "")
	}
	if code := send(admin, "GET", "/metrics", ""); code != 200 || !strings.Contains(bodies.String(), `key="alice"`) || !strings.Contains(bodies.String(), `key="token"`) {
		t.Fatalf("/metrics: %d, lacks the key names", code)
	}
	// A key file that turns bad is logged, not its keys.
	os.WriteFile(keysFile, []byte(`{"version":1,"keys":[{"name":"x","hash":"`+alice+`"}]}`), 0o600)
	time.Sleep(KeyReloadInterval + 100*time.Millisecond)
	send(admin, "GET", "/v1/sessions", "")
	// A failing store logs its error (500), not the caller's key.
	store.Close()
	if code := send(token, "POST", "/v1/recall", `{"session":"alice","query":"tea"}`); code < 500 {
		t.Fatalf("recall on a closed store: %d", code)
	}
	if !strings.Contains(logs.String(), "key file not reloaded") || !strings.Contains(logs.String(), "request failed") {
		t.Fatalf("the test did not reach the logged failures:\n%s", logs.String())
	}
	for name, secret := range map[string]string{"alice": alice, "admin": admin, "token": token, "alice's random part": alice[len(KeyPrefix):]} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %s's key:\n%s", name, logs.String())
		}
		if strings.Contains(bodies.String(), secret) {
			t.Errorf("an answer holds %s's key", name)
		}
	}
}

func newHTTPTestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptestServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

var httptestServer = httptest.NewServer
