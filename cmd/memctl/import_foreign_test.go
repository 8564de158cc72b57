package main

import (
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/importer"
)

// chromaFixture copies shared/datasets/chroma/chatbot-rag-local (found above the working
// directory) into a temporary directory, or skips the test.
func chromaFixture(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	src := ""
	for dir := wd; src == ""; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "shared", "datasets", "chroma", "chatbot-rag-local")
		if _, err := os.Stat(filepath.Join(p, "chroma.sqlite3")); err == nil {
			src = p
		} else if filepath.Dir(dir) == dir {
			t.Skip("shared/datasets/chroma/chatbot-rag-local is not above the working directory")
		}
	}
	dst := filepath.Join(t.TempDir(), "chroma")
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(filepath.Join(dst, rel), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestImportFromChroma(t *testing.T) {
	isolate(t)
	src := chromaFixture(t)
	db, err := os.ReadFile(filepath.Join(src, "chroma.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "store")

	out := mustRun(t, dir, "", "import", "--from", "chroma", "--dry-run", src)
	if !strings.Contains(out, "dry run: nothing written") || !strings.Contains(out, "read 26 records") || countMemories(t, dir) != 0 {
		t.Fatalf("dry run:\n%s", out)
	}
	out = mustRun(t, dir, "", "import", "--from", "chroma", src)
	for _, want := range []string{"read 26 records from chroma", "(collections knowledge_base_amigo_phi4): 26 memories",
		"wrote 26 memories, 0 already in the store", "26 embedded again by the store", "chroma:document  text",
		"source           source", "unmapped: none"} {
		if !strings.Contains(spaced(out), spaced(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := countMemories(t, dir); n != 26 {
		t.Fatalf("%d memories after the import", n)
	}
	var sessions []struct {
		Name     string
		Memories int
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "sessions", "--json")), &sessions); err != nil ||
		len(sessions) != 1 || sessions[0].Name != "knowledge_base_amigo_phi4" || sessions[0].Memories != 26 {
		t.Fatalf("sessions: %+v %v", sessions, err)
	}
	// Again: nothing twice.
	var rep importer.Report
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "import", "--json", "--from", "chroma", src)), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Written != 0 || rep.Existing != 26 || rep.Records != 26 || rep.Fields["page"]["metadata"] != 26 {
		t.Fatalf("second import: %+v", rep)
	}
	if n := countMemories(t, dir); n != 26 {
		t.Fatalf("%d memories after the second import", n)
	}
	// Into a session of one's choosing, and the search finds the documents.
	dir2 := filepath.Join(t.TempDir(), "store2")
	mustRun(t, dir2, "", "import", "--from", "chroma", "--session", "robotics", "--collection", "knowledge_base_amigo_phi4", src)
	if out := mustRun(t, dir2, "", "recall", "--session", "robotics", "wall following"); !strings.Contains(strings.ToLower(out), "wall") {
		t.Fatalf("recall after the import:\n%s", out)
	}
	after, err := os.ReadFile(filepath.Join(src, "chroma.sqlite3"))
	if err != nil || string(after) != string(db) {
		t.Fatal("the import changed chroma.sqlite3")
	}
	if entries, _ := os.ReadDir(src); len(entries) != 2 {
		t.Fatalf("%d entries in the source directory after the imports", len(entries))
	}

	_, errOut, code := memctl(t, dir, "", "import", "--from", "chroma", "--collection", "nosuch", src)
	if code != exitFailed || !strings.Contains(errOut, `no collection "nosuch"; there are knowledge_base_amigo_phi4 (26 records)`) {
		t.Fatalf("unknown collection: exit %d, %s", code, errOut)
	}
	_, errOut, code = memctl(t, dir, "", "import", "--from", "chroma", t.TempDir())
	if code != exitFailed || !strings.Contains(errOut, "no chroma.sqlite3") {
		t.Fatalf("not a persist directory: exit %d, %s", code, errOut)
	}
}

func TestImportFromMem0(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	fixture := filepath.Join("..", "..", "importer", "mem0", "testdata", "get_all_results.json")
	out := mustRun(t, dir, "", "import", "--from", "mem0", fixture)
	for _, want := range []string{"read 5 records from mem0", "4 memories, 1 left out (no text: 1)", "wrote 4 memories",
		"user_id          session", "hash        mem0's MD5 of the text, not kept  4", "relations   graph memory relations are not imported  2"} {
		if !strings.Contains(spaced(out), spaced(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	list, err := os.ReadFile(filepath.Join("..", "..", "importer", "mem0", "testdata", "get_all_list.json"))
	if err != nil {
		t.Fatal(err)
	}
	out = mustRun(t, dir, string(list), "import", "--from", "mem0", "-")
	if !strings.Contains(out, "wrote 3 memories") {
		t.Fatalf("list from stdin:\n%s", out)
	}
	if n := countMemories(t, dir); n != 7 {
		t.Fatalf("%d memories", n)
	}
	if out := mustRun(t, dir, "", "import", "--from", "mem0", fixture); !strings.Contains(out, "wrote 0 memories, 4 already in the store") {
		t.Fatalf("second import:\n%s", out)
	}
	out = mustRun(t, dir, "", "list", "--session", "carol", "--json")
	if !strings.Contains(out, "Loves hiking in the Alps") || !strings.Contains(out, `"hobbies"`) {
		t.Fatalf("carol's memories:\n%s", out)
	}

	// A malformed dump fails before anything is written.
	empty := filepath.Join(t.TempDir(), "store")
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`[{"id": "a", "memory": "fine"}, {"id": "b", "memory": 7}]`), 0o600)
	_, errOut, code := memctl(t, empty, "", "import", "--from", "mem0", bad)
	if code != exitFailed || !strings.Contains(errOut, `memory 2: id "b": "memory" is not a string`) {
		t.Fatalf("malformed dump: exit %d, %s", code, errOut)
	}
	if _, err := os.Stat(empty); err == nil {
		t.Fatal("a malformed dump created the store")
	}
}

// spaced collapses runs of blanks, so table columns compare whatever their width.
func spaced(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func TestImportFromUsage(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	for _, args := range [][]string{
		{"import", "--from", "sqlite", "x"},
		{"import", "--collection", "a", "x"},
		{"import", "--session", "a", "x"},
		{"import", "--from", "mem0", "--vectors", "keep", "x"},
		{"import", "--from", "chroma", "--vectors", "always", "x"},
		{"import", "--from", "chroma", "--session", "a", "--session-key", "b", "x"},
		{"import", "--from", "chroma"},
	} {
		if _, errOut, code := memctl(t, dir, "", args...); code != exitUsage {
			t.Errorf("%q: exit %d (%s), want %d", args, code, errOut, exitUsage)
		}
	}
}

// TestImportFromThroughServer imports while memctl serve holds the store: the same report,
// written through the API, and a second run finds every memory there.
func TestImportFromThroughServer(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "init")
	startServe(t, dir)
	fixture := filepath.Join("..", "..", "importer", "mem0", "testdata", "get_all_results.json")
	if out := mustRun(t, dir, "", "import", "--from", "mem0", fixture); !strings.Contains(out, "wrote 4 memories, 0 already") {
		t.Fatalf("through the server:\n%s", out)
	}
	if out := mustRun(t, dir, "", "import", "--from", "mem0", fixture); !strings.Contains(out, "wrote 0 memories, 4 already") {
		t.Fatalf("again through the server:\n%s", out)
	}
	src := chromaFixture(t)
	if out := mustRun(t, dir, "", "import", "--from", "chroma", src); !strings.Contains(out, "wrote 26 memories, 0 already") {
		t.Fatalf("chroma through the server:\n%s", out)
	}
	if n := countMemories(t, dir); n != 30 {
		t.Fatalf("%d memories through the server", n)
	}
}
