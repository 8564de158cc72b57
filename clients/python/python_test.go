// Package python_test runs the Python client's tests (clients/python/tests) against a real
// `memctl serve`: it builds memctl, starts it on a free loopback port over a new store, and a
// second one over https with a self-signed certificate and a bearer token, installs the
// client with each Python's own pip, offline (--no-index), and runs the tests with the
// installed copy. It checks the first python3 on PATH and /usr/bin/python3, and skips when
// neither exists.
package python_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/internal/servetest"
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

// cleanEnv is servetest's clean environment without PYTHONPATH, so the tests import the
// installed copy.
func cleanEnv(t *testing.T, extra ...string) []string {
	return servetest.CleanEnv(t, []string{"PYTHONPATH="}, extra...)
}

func TestPythonClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memctl and runs the Python tests")
	}
	pys := pythons(t)
	bin := servetest.Build(t)
	url, logs := servetest.Serve(t, bin)
	// A second server over https, with its self-signed certificate, that wants a bearer token:
	// the clients' TLS and token paths (tests/test_async.py TLSTokenTest).
	tlsDir := t.TempDir()
	token := "py-test-token-0123456789abcdef0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(tlsDir, "cert.pem")
	tlsURL, tlsLogs := servetest.ServeTLS(t, bin, caFile, "--tls-self-signed", "--tls-dir", tlsDir, "--token-file", tokenFile)
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
			run.Env = cleanEnv(t, "ENGRAM_URL="+url, "ENGRAM_TLS_URL="+tlsURL, "ENGRAM_TLS_CA="+caFile,
				"ENGRAM_TLS_TOKEN="+token, "PYTHONPATH="+target, "PYTHONDONTWRITEBYTECODE=1")
			out, err := run.CombinedOutput()
			if err != nil {
				t.Fatalf("python tests with %s: %v\n%s\nserver log:\n%s\nhttps server log:\n%s", py, err, out, logs.String(), tlsLogs.String())
			}
			if !bytes.Contains(out, []byte("OK")) || bytes.Contains(out, []byte("skipped")) {
				t.Fatalf("python tests with %s did not all run:\n%s", py, out)
			}
			t.Logf("%s: %s, %s", py, ranLine(out), lastLine(out))
		})
	}
}

// ranLine is unittest's "Ran N tests in Ts" line.
func ranLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Ran ") {
			return l
		}
	}
	return "no Ran line"
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return fmt.Sprint(lines[len(lines)-1])
}
