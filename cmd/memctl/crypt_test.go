package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEncryptedStoreCLI: init --encrypt with a passphrase from the
// environment, a remember and recall through it, a wrong passphrase and a
// missing one refused with exit code 4, change-key to a key file.
func TestEncryptedStoreCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	runCode := func(stdin string, args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--dir", dir}, args...), strings.NewReader(stdin), &out, &errb)
		return code, out.String() + errb.String()
	}
	t.Setenv("ENGRAM_PASSPHRASE", "a long test passphrase")
	if code, out := runCode("", "init", "--encrypt"); code != 0 {
		t.Fatalf("init --encrypt: %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "KEYS")); err != nil {
		t.Fatal(err)
	}
	if code, out := runCode("", "remember", "--session", "s1", "the QUOKKA-SECRET sleeps in the garden"); code != 0 {
		t.Fatalf("remember: %d %s", code, out)
	}
	if code, out := runCode("", "recall", "--session", "s1", "quokka"); code != 0 || !strings.Contains(out, "QUOKKA-SECRET") {
		t.Fatalf("recall: %d %s", code, out)
	}
	t.Setenv("ENGRAM_PASSPHRASE", "wrong")
	if code, out := runCode("", "recall", "--session", "s1", "quokka"); code != exitKey || !strings.Contains(out, "wrong passphrase") {
		t.Fatalf("wrong passphrase: %d %s", code, out)
	}
	t.Setenv("ENGRAM_PASSPHRASE", "")
	if code, out := runCode("", "recall", "--session", "s1", "quokka"); code != exitKey {
		t.Fatalf("no passphrase: %d %s", code, out)
	}
	kf := filepath.Join(t.TempDir(), "key")
	if code, out := runCode("", "keyfile", kf); code != 0 {
		t.Fatalf("keyfile: %d %s", code, out)
	}
	t.Setenv("ENGRAM_PASSPHRASE", "a long test passphrase")
	t.Setenv("ENGRAM_NEW_KEY_FILE", kf)
	if code, out := runCode("", "change-key"); code != 0 {
		t.Fatalf("change-key: %d %s", code, out)
	}
	t.Setenv("ENGRAM_PASSPHRASE", "")
	if code, out := runCode("", "--key-file", kf, "recall", "--session", "s1", "quokka"); code != 0 || !strings.Contains(out, "QUOKKA-SECRET") {
		t.Fatalf("recall with the key file: %d %s", code, out)
	}
	if code, out := runCode("", "--key-file", kf, "check"); code != 0 {
		t.Fatalf("check: %d %s", code, out)
	}
}

// TestEncryptedBackupCLI: a backup of an encrypted store holds no KEYS and
// no plaintext, and says how to open it (exit 4); backup --with-keys opens
// on its own with the passphrase.
func TestEncryptedBackupCLI(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	runCode := runIn
	t.Setenv("ENGRAM_PASSPHRASE", "a long test passphrase")
	if code, out := runCode(dir, "init", "--encrypt"); code != 0 {
		t.Fatalf("init --encrypt: %d %s", code, out)
	}
	if code, out := runCode(dir, "remember", "--session", "s1", "the WOMBAT-SECRET digs at dawn"); code != 0 {
		t.Fatalf("remember: %d %s", code, out)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if code, out := runCode(dir, "backup", plain); code != 0 {
		t.Fatalf("backup: %d %s", code, out)
	}
	keyed := filepath.Join(t.TempDir(), "keyed")
	if code, out := runCode(dir, "backup", "--with-keys", keyed); code != 0 {
		t.Fatalf("backup --with-keys: %d %s", code, out)
	}
	for _, d := range []string{dir, plain, keyed} {
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("WOMBAT-SECRET")) {
					t.Errorf("plaintext in %s", p)
				}
			}
			return nil
		})
	}
	if _, err := os.Stat(filepath.Join(plain, "KEYS")); err == nil {
		t.Fatal("a backup without --with-keys holds KEYS")
	}
	if code, out := runCode(plain, "recall", "--session", "s1", "wombat"); code != exitKey || !strings.Contains(out, "KEYS") {
		t.Fatalf("backup without keys: %d %s", code, out)
	}
	if code, out := runCode(keyed, "recall", "--session", "s1", "wombat"); code != 0 || !strings.Contains(out, "WOMBAT-SECRET") {
		t.Fatalf("backup with keys: %d %s", code, out)
	}
	os.WriteFile(filepath.Join(plain, "KEYS"), must(os.ReadFile(filepath.Join(dir, "KEYS"))), 0o600)
	if code, out := runCode(plain, "recall", "--session", "s1", "wombat"); code != 0 || !strings.Contains(out, "WOMBAT-SECRET") {
		t.Fatalf("backup with the store's KEYS copied in: %d %s", code, out)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestRotateKeysCLI: rotate-keys moves the store to a new key generation
// and it still recalls; a backup taken before opens with the store's KEYS
// until --drop-old; a wrong passphrase exits 4.
func TestRotateKeysCLI(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	runCode := runIn
	t.Setenv("ENGRAM_PASSPHRASE", "a long test passphrase")
	for _, args := range [][]string{{"init", "--encrypt"}, {"remember", "--session", "s1", "the NUMBAT-SECRET eats termites"}} {
		if code, out := runCode(dir, args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	before := filepath.Join(t.TempDir(), "before")
	if code, out := runCode(dir, "backup", before); code != 0 {
		t.Fatalf("backup: %d %s", code, out)
	}
	t.Setenv("ENGRAM_PASSPHRASE", "wrong")
	if code, out := runCode(dir, "rotate-keys"); code != exitKey {
		t.Fatalf("rotate-keys, wrong passphrase: %d %s", code, out)
	}
	t.Setenv("ENGRAM_PASSPHRASE", "a long test passphrase")
	if code, out := runCode(dir, "rotate-keys"); code != 0 || !strings.Contains(out, "generation 2") {
		t.Fatalf("rotate-keys: %d %s", code, out)
	}
	if code, out := runCode(dir, "recall", "--session", "s1", "numbat"); code != 0 || !strings.Contains(out, "NUMBAT-SECRET") {
		t.Fatalf("recall after rotation: %d %s", code, out)
	}
	os.WriteFile(filepath.Join(before, "KEYS"), must(os.ReadFile(filepath.Join(dir, "KEYS"))), 0o600)
	if code, out := runCode(before, "recall", "--session", "s1", "numbat"); code != 0 || !strings.Contains(out, "NUMBAT-SECRET") {
		t.Fatalf("backup from before with the rotated KEYS: %d %s", code, out)
	}
	if code, out := runCode(dir, "rotate-keys", "--drop-old"); code != 0 || !strings.Contains(out, "generation 3; older generations destroyed") {
		t.Fatalf("rotate-keys --drop-old: %d %s", code, out)
	}
	if code, out := runCode(dir, "recall", "--session", "s1", "numbat"); code != 0 || !strings.Contains(out, "NUMBAT-SECRET") {
		t.Fatalf("recall after --drop-old: %d %s", code, out)
	}
	os.WriteFile(filepath.Join(before, "KEYS"), must(os.ReadFile(filepath.Join(dir, "KEYS"))), 0o600)
	if code, out := runCode(before, "recall", "--session", "s1", "numbat"); code == 0 || strings.Contains(out, "NUMBAT-SECRET") {
		t.Fatalf("backup from before after --drop-old: %d %s", code, out)
	}
}

// TestEncryptedStoreOperations: export and import, reembed, check and
// repair work on an encrypted store, and leave no plaintext in it.
func TestEncryptedStoreOperations(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	runCode := runIn
	t.Setenv("ENGRAM_PASSPHRASE", "a long test passphrase")
	exported := filepath.Join(t.TempDir(), "out.jsonl")
	steps := [][]string{
		{"init", "--encrypt"},
		{"remember", "--session", "s1", "the PANGOLIN-SECRET rolls into a ball"},
		{"remember", "--session", "s2", "the QUOLL-SECRET hunts at night"},
		{"export", "--out", exported},
		{"reembed", "--to", "lexical"},
		{"check"},
		{"repair"},
	}
	for _, args := range steps {
		if code, out := runCode(dir, args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	if code, out := runCode(dir, "recall", "--session", "s1", "pangolin"); code != 0 || !strings.Contains(out, "PANGOLIN-SECRET") {
		t.Fatalf("recall after reembed: %d %s", code, out)
	}
	other := filepath.Join(t.TempDir(), "other")
	for _, args := range [][]string{{"init", "--encrypt"}, {"import", exported}} {
		if code, out := runCode(other, args...); code != 0 {
			t.Fatalf("other %v: %d %s", args, code, out)
		}
	}
	if code, out := runCode(other, "recall", "--session", "s2", "quoll"); code != 0 || !strings.Contains(out, "QUOLL-SECRET") {
		t.Fatalf("recall after import: %d %s", code, out)
	}
	for _, d := range []string{dir, other} {
		if code, out := runCode(d, "compact"); code != 0 {
			t.Fatalf("compact: %d %s", code, out)
		}
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("PANGOLIN-SECRET")) || bytes.Contains(b, []byte("QUOLL-SECRET")) {
					t.Errorf("plaintext in %s", p)
				}
			}
			return nil
		})
	}
}

// runIn runs memctl with --dir d and returns its exit code and its
// stdout and stderr together.
func runIn(d string, args ...string) (int, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"--dir", d}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String() + errb.String()
}
