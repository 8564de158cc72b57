package beir

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, name, content string, gz bool) {
	t.Helper()
	if !gz {
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.OpenFile(name+".gz", os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "x_corpus.jsonl"),
		`{"_id": "d1", "title": "T", "text": "body one", "session": "s1", "time": "2024-05-01T10:00:00Z"}
{"_id": 2, "text": "body two", "time": 1700000000}

{"_id": "d3", "text": "three", "time": "2024-05-02", "extra": [1, 2]}
`, true)
	writeFile(t, filepath.Join(dir, "x_queries.jsonl"), `{"_id": "q1", "text": "one?", "session": "s1"}
{"_id": "q2", "text": "two?"}
`, false)
	writeFile(t, filepath.Join(dir, "x_qrels.tsv"), "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\t2\t0\n", false)
	ds, err := Load(dir, "x_")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Docs) != 3 || len(ds.Queries) != 2 {
		t.Fatalf("%d docs %d queries", len(ds.Docs), len(ds.Queries))
	}
	d := ds.Docs[0]
	if d.ID != "d1" || d.Content() != "T body one" || d.Session != "s1" || !d.Time.Equal(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("doc 0: %+v", d)
	}
	if ds.Docs[1].ID != "2" || ds.Docs[1].Time.Unix() != 1700000000 || ds.Docs[1].Content() != "body two" {
		t.Errorf("doc 1: %+v", ds.Docs[1])
	}
	if !ds.Docs[2].Time.Equal(time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("doc 2 time %v", ds.Docs[2].Time)
	}
	if ds.Queries[0].Session != "s1" || ds.Queries[1].Session != "" {
		t.Errorf("queries %+v", ds.Queries)
	}
	if ds.Qrels["q1"]["d1"] != 1 || ds.Qrels["q2"]["2"] != 0 {
		t.Errorf("qrels %v", ds.Qrels)
	}
	if j := ds.Judged(); len(j) != 1 || j[0].ID != "q1" {
		t.Errorf("judged %v", j)
	}
}

func TestLoadErrors(t *testing.T) {
	good := map[string]string{
		"corpus.jsonl":  `{"_id": "d1", "text": "a"}` + "\n",
		"queries.jsonl": `{"_id": "q1", "text": "a"}` + "\n",
		"qrels.tsv":     "q1\td1\t1\n",
	}
	bad := []struct{ file, content, want string }{
		{"corpus.jsonl", `{"_id": "d1", "text": "a"}` + "\n" + `{"_id": "d1", "text": "b"}`, "duplicate document"},
		{"corpus.jsonl", `{"text": "a"}`, "_id: missing"},
		{"corpus.jsonl", `{"_id": "d1", "text": "a", "time": "yesterday"}`, "time:"},
		{"corpus.jsonl", `not json`, "line 1"},
		{"queries.jsonl", `{"_id": ["x"], "text": "a"}`, "_id: not a string"},
		{"qrels.tsv", "q1\td1\t1\nq2\td2\tmaybe\n", "line 2: grade"},
		{"qrels.tsv", "q1\td1\n", "2 fields"},
	}
	for _, b := range bad {
		dir := t.TempDir()
		for f, c := range good {
			if f == b.file {
				c = b.content
			}
			writeFile(t, filepath.Join(dir, f), c, false)
		}
		_, err := Load(dir, "")
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s %q: err %v, want %q", b.file, b.content, err, b.want)
		}
	}
	if _, err := Load(t.TempDir(), ""); err == nil {
		t.Error("empty dir loaded")
	}
}

func FuzzReadQrels(f *testing.F) {
	f.Add("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
	f.Add("q\t0\td\t2\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		q := Qrels{}
		_ = readQrels(strings.NewReader(s), q)
	})
}

func FuzzReadCorpus(f *testing.F) {
	f.Add(`{"_id": "d1", "title": "T", "text": "x", "session": 3, "time": 1.5}`)
	f.Add(`{"_id": 1e300, "time": "2024-01-01"}`)
	f.Fuzz(func(t *testing.T, s string) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "corpus.jsonl"), s, false)
		writeFile(t, filepath.Join(dir, "queries.jsonl"), s, false)
		writeFile(t, filepath.Join(dir, "qrels.tsv"), "", false)
		_, _ = Load(dir, "")
	})
}
