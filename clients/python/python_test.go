// Package python_test runs the Python client's tests (clients/python/tests) against a real
// `memctl serve`: it builds memctl, starts it on a free loopback port over a new store,
// installs the client with each Python's own pip, offline (--no-index), and runs the tests
// with the installed copy. It checks the first python3 on PATH and /usr/bin/python3, and
// skips when neither exists.
package python_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func pythons(t *testing.T) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			real = path
		}
		// pyenv shims resolve to a script; ask the interpreter itself.
		if b, err := exec.Command(path, "-c", "import sys; print(sys.executable)").Output(); err == nil {
			real = strings.TrimSpace(string(b))
		}
		if !seen[real] {
			seen[real] = true
			out = append(out, path)
		}
	}
	if len(out) == 0 {
		t.Skip("no python3 on PATH or at /usr/bin/python3")
	}
	return out
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// cleanEnv is the environment without ENGRAM_ settings and with private config and data dirs.
func cleanEnv(t *testing.T, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ENGRAM_") && !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "PYTHONPATH=") {
			env = append(env, kv)
		}
	}
	return append(env, append([]string{"XDG_CONFIG_HOME=" + t.TempDir(), "XDG_DATA_HOME=" + t.TempDir()}, extra...)...)
}

func TestPythonClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memctl and runs the Python tests")
	}
	pys := pythons(t)
	bin := filepath.Join(t.TempDir(), "memctl")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/memctl")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building memctl: %v\n%s", err, out)
	}
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	serve := exec.CommandContext(ctx, bin, "--dir", filepath.Join(t.TempDir(), "store"), "serve", "--addr", addr)
	serve.Env = cleanEnv(t)
	serve.Stdout, serve.Stderr = &logs, &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = serve.Wait()
	}()
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("memctl serve did not come up at %s:\n%s", url, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, py := range pys {
		t.Run(strings.ReplaceAll(py, "/", "_"), func(t *testing.T) {
			// Offline install with the interpreter's own pip: nothing may come from an index.
			target := t.TempDir()
			install := exec.Command(py, "-m", "pip", "install", "--no-index", "--no-cache-dir", "--target", target, ".")
			install.Env = cleanEnv(t, "PIP_NO_INDEX=1", "PIP_FIND_LINKS=")
			if out, err := install.CombinedOutput(); err != nil {
				t.Fatalf("pip install --no-index ./clients/python with %s: %v\n%s", py, err, out)
			}
			if _, err := os.Stat(filepath.Join(target, "engram", "py.typed")); err != nil {
				t.Fatalf("the installed package lacks py.typed: %v", err)
			}
			// The tests import the installed copy (a fresh directory, not the sources).
			run := exec.Command(py, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", "tests")
			run.Env = cleanEnv(t, "ENGRAM_URL="+url, "PYTHONPATH="+target, "PYTHONDONTWRITEBYTECODE=1")
			out, err := run.CombinedOutput()
			if err != nil {
				t.Fatalf("python tests with %s: %v\n%s\nserver log:\n%s", py, err, out, logs.String())
			}
			if !bytes.Contains(out, []byte("OK")) || bytes.Contains(out, []byte("skipped")) {
				t.Fatalf("python tests with %s did not all run:\n%s", py, out)
			}
			t.Logf("%s: %s", py, lastLine(out))
		})
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return fmt.Sprint(lines[len(lines)-1])
}
