// Package typescript_test runs the TypeScript client's tests (clients/typescript/test)
// against a real `memctl serve`, as clients/python/python_test.go does for Python: it
// installs the npm packages the tests need with scripts/npm-clients.sh (npm ci from
// package-lock.json, cached), checks that src/openapi.ts is what scripts/generate.mjs makes
// of server/openapi.json, compiles the package and its tests from source with the
// typescript package into a new directory, builds memctl, starts it on a free loopback port
// over a new store and runs the tests with node's test runner. Without node or npm it
// skips, saying so, except under CI=true, where it fails: CI must run these tests.
package typescript_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/internal/servetest"
)

// minNode is the oldest node the tests run on: the client needs 18, but the frameworks
// the adapters are tested with (@langchain/core 1.x) need 20.
const minNode = 20

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (CI=true: the TypeScript client must be tested here)", args...)
	}
	t.Skipf(format, args...)
}

func tools(t *testing.T) string {
	node, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, "no node on PATH: the TypeScript client's tests need node >= %d and npm", minNode)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		skipOrFail(t, "no npm on PATH: the TypeScript client's tests install their packages with npm")
	}
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("node -p process.versions.node: %v", err)
	}
	v := strings.TrimSpace(string(out))
	major, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if major < minNode {
		skipOrFail(t, "node %s is older than %d", v, minNode)
	}
	return node
}

// cleanEnv is servetest's clean environment without node's and LangChain's settings
// (LangSmith tracing would reach the network).
func cleanEnv(t *testing.T, extra ...string) []string {
	return servetest.CleanEnv(t, []string{"NODE_", "LANGCHAIN_", "LANGSMITH_"}, extra...)
}

func run(t *testing.T, what, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	start := time.Now()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
	t.Logf("%s: %.1fs", what, time.Since(start).Seconds())
	return out
}

// copySources copies the package's sources (not node_modules or dist) to dir and links
// node_modules, so the build starts from the committed files and nothing else.
func copySources(t *testing.T, dir string) {
	for _, name := range []string{"package.json", "tsconfig.json", "tsconfig.test.json", "src", "test", "scripts"} {
		err := filepath.WalkDir(name, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return os.MkdirAll(filepath.Join(dir, p), 0o755)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, p), b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	nm, err := filepath.Abs("node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(nm, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
}

func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("installs npm packages, builds memctl and runs the TypeScript tests")
	}
	node := tools(t)
	env := cleanEnv(t)

	// memctl builds while npm installs and tsc compiles.
	memctl := servetest.StartBuild(t)

	start := time.Now()
	cmd := exec.Command("bash", "../../scripts/npm-clients.sh")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		offline := bytes.Contains(out, []byte("ENOTFOUND")) || bytes.Contains(out, []byte("ETIMEDOUT")) || bytes.Contains(out, []byte("ENOTCACHED")) || bytes.Contains(out, []byte("EAI_AGAIN"))
		if offline && os.Getenv("CI") != "true" {
			memctl()
			t.Skipf("npm could not reach the registry and the cache lacks a package:\n%s", out)
		}
		t.Fatalf("scripts/npm-clients.sh: %v\n%s", err, out)
	}
	t.Logf("npm packages: %.1fs", time.Since(start).Seconds())

	openapi, err := filepath.Abs("../../server/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	// The committed types are what the document makes (the message names every difference).
	run(t, "node scripts/generate.mjs --check", ".", append(env, "ENGRAM_OPENAPI="+openapi), node, "scripts/generate.mjs", "--check")

	pkg := t.TempDir()
	copySources(t, pkg)
	run(t, "tsc (package and tests, from source)", pkg, env, node, "node_modules/typescript/bin/tsc", "-p", "tsconfig.test.json")

	// A small short-term budget, so that a few turns already compress into a summary.
	url, logs := servetest.Serve(t, memctl(), "--short-term-tokens", "120")

	files, err := filepath.Glob(filepath.Join(pkg, "dist", "test", "*.test.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no compiled tests in %s (%v)", filepath.Join(pkg, "dist", "test"), err)
	}
	args := append([]string{"--test", "--test-reporter=tap", "--test-timeout=120000"}, files...)
	start = time.Now()
	cmd = exec.Command(node, args...)
	cmd.Dir = pkg
	cmd.Env = append(env, "ENGRAM_URL="+url, "ENGRAM_OPENAPI="+openapi)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s\nserver log:\n%s", err, out, logs.String())
	}
	counts := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^# (tests|pass|fail|skipped|todo|cancelled) (\d+)$`).FindAllSubmatch(out, -1) {
		counts[string(m[1])], _ = strconv.Atoi(string(m[2]))
	}
	if counts["tests"] == 0 || counts["pass"] != counts["tests"] || counts["skipped"]+counts["todo"]+counts["cancelled"] != 0 {
		t.Fatalf("the TypeScript tests did not all run and pass (%v):\n%s", counts, out)
	}
	t.Logf("node --test: %d tests passed in %.1fs", counts["pass"], time.Since(start).Seconds())
	if testing.Verbose() {
		for _, m := range regexp.MustCompile(`(?m)^ok \d+ - (.*)$`).FindAllSubmatch(out, -1) {
			t.Logf("ok  %s", m[1])
		}
	}

	t.Run("deno", func(t *testing.T) {
		deno := os.Getenv("ENGRAM_DENO")
		if deno == "" {
			var err error
			if deno, err = exec.LookPath("deno"); err != nil {
				t.Skip("no deno on PATH (ENGRAM_DENO names one): the built client was not tried on Deno")
			}
		}
		// Type-checked against the built declarations, then run; nothing is fetched.
		run(t, "deno run --check test/deno/smoke.ts", pkg, append(cleanEnv(t), "ENGRAM_URL="+url, "DENO_DIR="+t.TempDir(), "NO_COLOR=1"),
			deno, "run", "--check", "--no-remote", "--no-npm", "--no-config", "--allow-net="+strings.TrimPrefix(url, "http://"), "--allow-env=ENGRAM_URL", "test/deno/smoke.ts")
	})
}
