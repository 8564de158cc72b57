package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/server"
)

// serveUntilReady runs serve with args until it logs "serving", then stops
// it and returns its exit code and stderr.
func serveUntilReady(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--dir", dir, "serve"}, args...), strings.NewReader(""), &out, &errb)
	}()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case code := <-done:
			return code, errb.String()
		case <-deadline:
			cancel()
			t.Fatalf("serve %q did not start: %s", args, errb.String())
		case <-time.After(20 * time.Millisecond):
			if strings.Contains(errb.String(), "msg=serving") {
				cancel()
				return <-done, errb.String()
			}
		}
	}
}

func TestServeSecurityFlags(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "init")
	keys := filepath.Join(t.TempDir(), "keys.json")
	secret, err := server.AddKey(keys, "alice", server.Scope{"alice"}, server.RightRead)
	if err != nil {
		t.Fatal(err)
	}
	strong := "0123456789abcdef0123456789abcdef0123"
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(strong+"\n"), 0o600)
	looseFile := filepath.Join(t.TempDir(), "loose")
	os.WriteFile(looseFile, []byte(strong), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"remote without keys", []string{"--addr", "0.0.0.0:0"}, "without keys"},
		{"remote without TLS", []string{"--addr", "0.0.0.0:0", "--keys", keys}, "refusing plain HTTP"},
		{"remote weak token", []string{"--addr", "0.0.0.0:0", "--token", "hunter2", "--insecure-http"}, "too weak"},
		{"token and token file", []string{"--token", "x", "--token-file", tokenFile}, "not both"},
		{"tls cert without key", []string{"--tls-cert", "c.pem"}, "go together"},
	} {
		_, errOut, code := memctl(t, dir, "", append([]string{"serve"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, %q; want exit 2 with %q", tc.name, code, errOut, tc.want)
		}
	}
	if _, errOut, code := memctl(t, dir, "", "serve", "--token-file", looseFile); code != exitFailed || !strings.Contains(errOut, "chmod 600") {
		t.Errorf("a world-readable token file: exit %d, %q", code, errOut)
	}

	// A token in argv is warned about; no secret reaches the log.
	code, errOut := serveUntilReady(t, dir, "--addr", "127.0.0.1:0", "--token", strong, "--keys", keys)
	if code != exitOK || !strings.Contains(errOut, "warning: --token puts a secret on the command line") {
		t.Fatalf("serve --token: exit %d\n%s", code, errOut)
	}
	if strings.Contains(errOut, strong) || strings.Contains(errOut, secret) {
		t.Fatalf("serve logged a secret:\n%s", errOut)
	}
	code, errOut = serveUntilReady(t, dir, "--addr", "127.0.0.1:0", "--token-file", tokenFile)
	if code != exitOK || strings.Contains(errOut, "warning") || strings.Contains(errOut, strong) || !strings.Contains(errOut, "auth=\"admin token") {
		t.Fatalf("serve --token-file: exit %d\n%s", code, errOut)
	}

	// A self-signed certificate is made once; its fingerprint is logged.
	tlsDir := filepath.Join(t.TempDir(), "tls")
	code, first := serveUntilReady(t, dir, "--addr", "127.0.0.1:0", "--tls-self-signed", "--tls-dir", tlsDir)
	if code != exitOK || !strings.Contains(first, "made a new self-signed certificate") || !strings.Contains(first, "addr=https://") {
		t.Fatalf("serve --tls-self-signed: exit %d\n%s", code, first)
	}
	code, second := serveUntilReady(t, dir, "--addr", "127.0.0.1:0", "--tls-self-signed", "--tls-dir", tlsDir)
	fp := func(log string) string {
		_, after, _ := strings.Cut(log, "sha256=")
		f, _, _ := strings.Cut(strings.Fields(after + " ")[0], " ")
		return strings.TrimSpace(f)
	}
	if code != exitOK || !strings.Contains(second, "using the self-signed certificate") || fp(first) == "" || fp(first) != fp(second) {
		t.Fatalf("second run: exit %d, fingerprints %q %q\n%s", code, fp(first), fp(second), second)
	}
}
