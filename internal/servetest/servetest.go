// Package servetest builds memctl and runs `memctl serve` on a free loopback port over a new
// store, for tests that exercise a door from outside the process (clients, evaluations through
// the HTTP API).
package servetest

import (
	"bytes"
	"context"
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
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(t.TempDir(), "memctl")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/memctl")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build memctl: %v\n%s", err, out)
	}
	return bin
}

// CleanEnv is the environment without ENGRAM_ and XDG_ settings and with private config and
// data directories, plus extra.
func CleanEnv(t testing.TB, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ENGRAM_") && !strings.HasPrefix(kv, "XDG_") {
			env = append(env, kv)
		}
	}
	return append(env, append([]string{"XDG_CONFIG_HOME=" + t.TempDir(), "XDG_DATA_HOME=" + t.TempDir()}, extra...)...)
}

// Serve starts `bin serve` with args over a new store on a free loopback port and returns its
// URL once /healthz answers, and its log. The server stops when the test ends.
func Serve(t testing.TB, bin string, args ...string) (string, *bytes.Buffer) {
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
	cmd.Env = CleanEnv(t)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	url := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url, &logs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("memctl serve %v did not come up at %s:\n%s", args, url, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
