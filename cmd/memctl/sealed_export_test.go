package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSealedExport: export --encrypt writes a file that holds none of the
// memories' text, import opens it with its passphrase (or key file) and
// restores every memory; a wrong or missing passphrase exits with code 4 and
// a damaged or cut file fails, each importing nothing.
func TestSealedExport(t *testing.T) {
	t.Setenv("ENGRAM_PASSPHRASE", "")
	t.Setenv("ENGRAM_EXPORT_PASSPHRASE", "")
	t.Setenv("ENGRAM_EXPORT_KEY_FILE", "")
	runIn := func(dir string, args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--dir", dir}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	src := filepath.Join(t.TempDir(), "src")
	secrets := []string{"the WOMBAT-7731 sleeps under the porch", "护照号码 E12345678 放在抽屉里"}
	for _, s := range secrets {
		if code, out := runIn(src, "remember", "--session", "alex", s); code != 0 {
			t.Fatalf("remember: %d %s", code, out)
		}
	}
	sealed := filepath.Join(t.TempDir(), "export.sealed")
	if code, out := runIn(src, "export", "--encrypt"); code != 2 || !strings.Contains(out, "--out") {
		t.Fatalf("--encrypt to stdout: %d %s", code, out)
	}
	if code, out := runIn(src, "export", "--encrypt", "--out", sealed); code != exitKey {
		t.Fatalf("--encrypt with no passphrase anywhere: %d %s", code, out)
	}
	if _, err := os.Stat(sealed); !os.IsNotExist(err) {
		t.Fatalf("a refused export left %s (%v)", sealed, err)
	}
	t.Setenv("ENGRAM_EXPORT_PASSPHRASE", "export passphrase 1")
	if code, out := runIn(src, "export", "--encrypt", "--vectors", "--out", sealed); code != 0 {
		t.Fatalf("export --encrypt: %d %s", code, out)
	}
	data, err := os.ReadFile(sealed)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(sealed); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	for _, s := range append(secrets, "WOMBAT", "E12345678", "alex", `"text"`) {
		if bytes.Contains(data, []byte(s)) {
			t.Fatalf("the sealed export holds %q in the clear", s)
		}
	}

	imported := func(dir string) int {
		code, out := runIn(dir, "--json", "list", "--session", "alex")
		if code != 0 {
			return 0
		}
		return strings.Count(out, `"id"`)
	}
	try := func(name string, file string, wantCode int, env ...string) {
		t.Helper()
		for i := 0; i+1 < len(env); i += 2 {
			t.Setenv(env[i], env[i+1])
		}
		dst := filepath.Join(t.TempDir(), name)
		code, out := runIn(dst, "import", file)
		if code != wantCode {
			t.Fatalf("%s: import exit %d, want %d: %s", name, code, wantCode, out)
		}
		if n := imported(dst); wantCode != 0 && n != 0 {
			t.Fatalf("%s: a failed import wrote %d memories", name, n)
		}
	}
	try("wrong", sealed, exitKey, "ENGRAM_EXPORT_PASSPHRASE", "not the passphrase")
	try("missing", sealed, exitKey, "ENGRAM_EXPORT_PASSPHRASE", "")
	damaged := filepath.Join(t.TempDir(), "damaged")
	bad := bytes.Clone(data)
	bad[len(bad)-30] ^= 1
	os.WriteFile(damaged, bad, 0o600)
	try("damaged", damaged, 1, "ENGRAM_EXPORT_PASSPHRASE", "export passphrase 1")
	cut := filepath.Join(t.TempDir(), "cut")
	os.WriteFile(cut, data[:len(data)-1], 0o600)
	try("cut", cut, 1)

	dst := filepath.Join(t.TempDir(), "dst")
	if code, out := runIn(dst, "import", sealed); code != 0 || !strings.Contains(out, "imported 2 memories") {
		t.Fatalf("import: %d %s", code, out)
	}
	if n := imported(dst); n != 2 {
		t.Fatalf("list after import counts %d memories, want 2", n)
	}
	for _, s := range secrets {
		if code, out := runIn(dst, "recall", "--session", "alex", s); code != 0 || !strings.Contains(out, s) {
			t.Fatalf("recall %q after import: %d %s", s, code, out)
		}
	}

	// A key file instead of a passphrase, given by flag on both sides.
	kf := filepath.Join(t.TempDir(), "export.key")
	if code, out := runIn(src, "keyfile", kf); code != 0 {
		t.Fatalf("keyfile: %d %s", code, out)
	}
	t.Setenv("ENGRAM_EXPORT_PASSPHRASE", "")
	byKey := filepath.Join(t.TempDir(), "bykey.sealed")
	if code, out := runIn(src, "export", "--encrypt", "--export-key-file", kf, "--out", byKey); code != 0 {
		t.Fatalf("export with a key file: %d %s", code, out)
	}
	dst2 := filepath.Join(t.TempDir(), "dst2")
	if code, out := runIn(dst2, "import", "--export-key-file", kf, byKey); code != 0 || !strings.Contains(out, "imported 2 memories") {
		t.Fatalf("import with the key file: %d %s", code, out)
	}
	// The flag on a plain export is a mistake, said so.
	plain := filepath.Join(t.TempDir(), "plain.jsonl")
	if code, out := runIn(src, "export", "--out", plain); code != 0 {
		t.Fatalf("plain export: %d %s", code, out)
	}
	if code, out := runIn(filepath.Join(t.TempDir(), "dst3"), "import", "--export-key-file", kf, plain); code != 2 {
		t.Fatalf("key flag on a plain export: %d %s", code, out)
	}
}
