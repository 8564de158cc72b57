// Package servetest builds memctl and runs `memctl serve` on a free loopback port over a new
// store, for tests that exercise a door from outside the process (clients, evaluations through
// the HTTP API).
package servetest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Build compiles cmd/memctl into a temporary directory and returns the binary's path.
func Build(t testing.TB) string {
	t.Helper()
	bin, err := build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// StartBuild compiles cmd/memctl in the background, so that a test can install or compile
// something else meanwhile; the returned function waits and returns the binary's path (it fails
// the test on a build error, and must be called from the test's goroutine).
func StartBuild(t testing.TB) func() string {
	dir := t.TempDir()
	done := make(chan error, 1)
	var bin string
	go func() {
		var err error
		bin, err = build(dir)
		done <- err
	}()
	return func() string {
		t.Helper()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return bin
	}
}

func build(dir string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(dir, "memctl")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/memctl")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build memctl: %v\n%s", err, out)
	}
	return bin, nil
}

// CleanEnv is the environment without engram's and XDG's settings (their cache directories
// kept), without any variable that begins with one of drop (a client's own settings, such as
// PYTHONPATH= or NODE_), and with private config and data directories, plus extra.
func CleanEnv(t testing.TB, drop []string, extra ...string) []string {
	var env []string
outer:
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ENGRAM_") && name != "ENGRAM_CACHE" || strings.HasPrefix(name, "XDG_") && name != "XDG_CACHE_HOME" {
			continue
		}
		for _, p := range drop {
			if strings.HasPrefix(kv, p) {
				continue outer
			}
		}
		env = append(env, kv)
	}
	return append(env, append([]string{"XDG_CONFIG_HOME=" + t.TempDir(), "XDG_DATA_HOME=" + t.TempDir()}, extra...)...)
}

// Serve starts `bin serve` with args over a new store on a free loopback port and returns its
// URL once /healthz answers, and its log. The server stops when the test ends.
func Serve(t testing.TB, bin string, args ...string) (string, *bytes.Buffer) {
	t.Helper()
	return serve(t, bin, "", args)
}

// ServeTLS is Serve for a server that makes its own certificate into caFile
// (--tls-self-signed --tls-dir, among args): it waits for the file and checks /healthz over
// https with that certificate as the only root.
func ServeTLS(t testing.TB, bin, caFile string, args ...string) (string, *bytes.Buffer) {
	t.Helper()
	return serve(t, bin, caFile, args)
}

func serve(t testing.TB, bin, caFile string, args []string) (string, *bytes.Buffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var logs bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append([]string{"--dir", filepath.Join(t.TempDir(), "store"), "serve", "--addr", addr}, args...)...)
	cmd.Env = CleanEnv(t, nil)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	url, client := "http://"+addr, http.DefaultClient
	if caFile != "" {
		url, client = "https://"+addr, nil
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if client == nil {
			// The certificate appears once the server has made it.
			if pem, err := os.ReadFile(caFile); err == nil {
				if pool := x509.NewCertPool(); pool.AppendCertsFromPEM(pem) {
					client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
				}
			}
		}
		if client != nil {
			if resp, err := client.Get(url + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return url, &logs
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("memctl serve %v did not come up at %s:\n%s", args, url, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
