package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/bench/beir"
)

// writeSet writes a tiny BEIR folder where each query names its document's unique words, with
// sessions and times on some documents.
func writeSet(t *testing.T) string {
	dir := t.TempDir()
	corpus := `{"_id":"d1","title":"Volcanoes","text":"Basalt lava flows from shield volcanoes in Hawaii.","session":"geo","time":"2024-01-01"}
{"_id":"d2","text":"The sourdough starter needs flour and water every day.","session":"food","time":"2024-06-01"}
{"_id":"d3","text":"Penguins huddle together to survive the Antarctic winter.","session":"geo"}
{"_id":"d4","text":"熊猫主要吃竹子，生活在四川的山区。","session":"geo"}
{"_id":"d5","text":"   "}
`
	queries := `{"_id":"q1","text":"shield volcano lava","session":"geo"}
{"_id":"q2","text":"sourdough starter flour"}
{"_id":"q3","text":"熊猫吃什么","session":"geo"}
{"_id":"q4","text":"unjudged query"}
{"_id":"q5","text":"sourdough","session":"geo"}
`
	qrels := "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td4\t2\nq5\td2\t1\n"
	for name, body := range map[string]string{"corpus.jsonl": corpus, "queries.jsonl": queries, "qrels.tsv": qrels} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRunTinySet(t *testing.T) {
	dir := writeSet(t)
	for _, args := range [][]string{
		{"-mode", "bm25"}, {"-mode", "vector"}, {"-mode", "hybrid"}, {"-mode", "hybrid", "-fusion", "rrf", "-backend", "mem"},
		{"-mode", "hybrid", "-decay", "-dedup", "-chunk", "20"},
	} {
		var out bytes.Buffer
		if err := run(append([]string{"-data", dir}, args...), &out); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var o Output
		if err := json.Unmarshal(out.Bytes(), &o); err != nil {
			t.Fatal(err)
		}
		// q1-q3 find their document first; q5 asks session geo for a food document: the session
		// filter must hide it, so it scores 0.
		// With -decay, d1 (five months older than the rest) may rank below a fresh chunk.
		if o.Queries != 4 || o.Docs != 5 || (o.MRR10 != 0.75 && !o.Decay) || o.Recall10 != 0.75 || o.P50US <= 0 || o.P99US < o.P50US {
			t.Fatalf("%v: %s", args, out.String())
		}
	}
}

func TestRunBadFlags(t *testing.T) {
	dir := writeSet(t)
	for _, args := range [][]string{{}, {"-data", dir, "-mode", "x"}, {"-data", dir, "-fusion", "x"},
		{"-data", dir, "-embedder", "x"}, {"-data", dir, "-backend", "x"}, {"-data", filepath.Join(dir, "missing")}} {
		if err := run(args, &bytes.Buffer{}); err == nil || strings.Contains(err.Error(), "panic") {
			t.Fatalf("%v: %v", args, err)
		}
	}
}

// TestHybridAtLeastBM25 runs locomo-dev, the set where ungated fusion with the lexical vectors
// fell below BM25 alone (0.567 against 0.570), with the store defaults: hybrid must not be
// below bm25 mode.
func TestHybridAtLeastBM25(t *testing.T) {
	if testing.Short() {
		t.Skip("runs locomo-dev (about a minute)")
	}
	root, ok := beir.FindDatasets()
	if !ok {
		t.Skip("shared/datasets not found")
	}
	ndcg := map[string]float64{}
	for _, mode := range []string{"bm25", "hybrid"} {
		var out bytes.Buffer
		if err := run([]string{"-data", filepath.Join(root, "text", "locomo-dev"), "-mode", mode, "-backend", "mem"}, &out); err != nil {
			t.Fatal(err)
		}
		var o Output
		if err := json.Unmarshal(out.Bytes(), &o); err != nil {
			t.Fatal(err)
		}
		ndcg[mode] = o.NDCG10
	}
	if ndcg["hybrid"] < ndcg["bm25"] || ndcg["bm25"] < 0.55 {
		t.Fatalf("locomo-dev nDCG@10: hybrid %.4f, bm25 %.4f", ndcg["hybrid"], ndcg["bm25"])
	}
	t.Logf("locomo-dev nDCG@10: hybrid %.4f, bm25 %.4f", ndcg["hybrid"], ndcg["bm25"])
}
