// Command retrieval measures the memory layer's retrieval quality and latency on a BEIR-style
// folder: it ingests every document through memory.Store.Remember (one memory per document, no
// chunking by default), runs every judged query through Recall, and prints one JSON object:
//
//	{"ndcg10":..,"recall5":..,"recall10":..,"mrr10":..,"ingest_s":..,"p50_us":..,"p99_us":.., ...}
//
// Usage:
//
//	go run ./bench/cmd/retrieval -data DIR [-prefix P] -mode bm25|vector|hybrid [-embedder lexical]
//	    [-dedup] [-decay] [-fusion weighted|rrf] [-vw W -kw W] [-gate G] [-chunk N] [-backend engine|mem]
//	    [-conversation=false]
//
// Documents with a "session" field are the turns of that session's conversation, in file order,
// and are remembered with memory.Store.RememberConversation (each turn a memory, its two
// neighbours on each side as its keyword context; -conversation=false: one Remember per
// document); queries with a session recall from it (otherwise from all sessions); a "time"
// field dates the memory. De-duplication and
// decay are off by default (merged documents would break the relevance labels); with -decay
// the clock is the newest time in the data. Latencies are per Recall call, single-threaded,
// query embedding included. The engine backend runs in a temporary directory without fsync
// (-sync turns it on), since ingest speed is not what this measures.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/bench/beir"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "retrieval:", err)
		os.Exit(1)
	}
}

// Output is the JSON the command prints.
type Output struct {
	beir.Metrics
	IngestS  float64 `json:"ingest_s"`
	P50US    float64 `json:"p50_us"`
	P99US    float64 `json:"p99_us"`
	Docs     int     `json:"docs"`
	Memories int     `json:"memories"`
	Turns    int     `json:"turns"` // documents remembered as conversation turns
	Merged   int     `json:"merged"`
	Data     string  `json:"data"`
	Mode     string  `json:"mode"`
	Embedder string  `json:"embedder"`
	Fusion   string  `json:"fusion,omitempty"`
	Backend  string  `json:"backend"`
	Dedup    bool    `json:"dedup"`
	Decay    bool    `json:"decay"`
}

// truncate cuts a document to what the engine stores in one record.
func truncate(text string) string {
	if len(text) > engine.MaxTextLen/2 {
		text = text[:engine.MaxTextLen/2]
		for len(text) > 0 && !utf8.RuneStart(text[len(text)-1]) {
			text = text[:len(text)-1]
		}
	}
	return strings.ToValidUTF8(text, "")
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("retrieval", flag.ContinueOnError)
	data := fs.String("data", "", "BEIR-style folder (corpus.jsonl, queries.jsonl, qrels.tsv; .gz accepted)")
	prefix := fs.String("prefix", "", "file name prefix inside -data (e.g. zh_)")
	mode := fs.String("mode", "hybrid", "bm25, vector or hybrid")
	embName := fs.String("embedder", "lexical", "embedder: lexical")
	dim := fs.Int("dim", 0, "lexical embedder dimension (0: its default)")
	fusion := fs.String("fusion", "weighted", "hybrid fusion: weighted or rrf")
	vw := fs.Float64("vw", 0, "vector weight in fusion (0 with -kw 0: the lexical store default, 0.5/0.5)")
	kw := fs.Float64("kw", 0, "keyword weight in fusion")
	gate := fs.Float64("gate", 0, "vector gate of weighted fusion (0: the store default, 0.8 for the lexical embedder; negative: none)")
	candidates := fs.Int("candidates", 0, "candidates per list (0: the memory default)")
	dedup := fs.Bool("dedup", false, "merge near-duplicate documents (breaks labels of merged documents)")
	decay := fs.Bool("decay", false, "time decay, clock = newest time in the data")
	chunkChars := fs.Int("chunk", -1, "chunk documents to this many characters (-1: one memory per document)")
	backend := fs.String("backend", "engine", "engine or mem")
	syncWrites := fs.Bool("sync", false, "fsync every write (engine backend)")
	conversation := fs.Bool("conversation", true, "remember the documents of each session as one conversation (memory.RememberConversation: neighbouring turns as context); off: one Remember per document")
	attrW := fs.Float64("attr", 0, "attribute list weight (0: the library default; negative: off)")
	minScore := fs.Float64("minscore", 0, "least Final score (0: the library default; negative: none)")
	minRel := fs.Float64("minrel", 0, "least fraction of the best Final score (0: the library default; negative: none)")
	superseded := fs.String("superseded", "demote", "what recall does with stale memories: demote (the default), hide or keep")
	noSupersede := fs.Bool("nosupersede", false, "turn supersede detection off (memory.Options.NoSupersede)")
	assistant := fs.Bool("assistant", false, "the assistant evaluation (annotations.json in -data, every store and recall default; see assistant.go)")
	now := fs.String("now", "", "-assistant: the clock at recall (RFC 3339 or YYYY-MM-DD; default the day after the newest memory)")
	k := fs.Int("k", 5, "-assistant: results per question")
	server := fs.String("server", "", "-assistant: write and ask through a running `memctl serve` at this URL (key from ENGRAM_TOKEN; its defaults, its clock) instead of the library")
	verbose := fs.Bool("v", false, "-assistant: print every question's results on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *data == "" {
		return errors.New("-data is required")
	}
	policy, ok := map[string]memory.SupersededPolicy{"demote": memory.SupersededDemote, "hide": memory.SupersededHide, "keep": memory.SupersededKeep}[*superseded]
	if !ok {
		return fmt.Errorf("unknown -superseded %q", *superseded)
	}
	if *assistant {
		return runAssistant(context.Background(), *data, *now, *server, *noSupersede, memory.RecallOptions{K: *k, AttributeWeight: *attrW, MinScore: *minScore,
			MinRelative: *minRel, Superseded: policy}, *verbose, stdout, os.Stderr)
	}
	// The modes and fusions every door parses (bm25 is keyword).
	rmode, err := api.ParseMode(*mode)
	if err != nil {
		return fmt.Errorf("-mode: %w", err)
	}
	rfusion, err := api.ParseFusion(*fusion)
	if err != nil {
		return fmt.Errorf("-fusion: %w", err)
	}
	if *embName != "lexical" {
		return fmt.Errorf("unknown -embedder %q (built in: lexical)", *embName)
	}
	emb, err := lexical.New(lexical.Options{Dim: *dim})
	if err != nil {
		return err
	}
	ds, err := beir.Load(*data, *prefix)
	if err != nil {
		return err
	}
	var newest time.Time
	for _, d := range ds.Docs {
		if d.Time.After(newest) {
			newest = d.Time
		}
	}
	if newest.IsZero() {
		newest = time.Now()
	}
	opts := memory.Options{
		NoSupersede:  *noSupersede,
		Embedder:     emb,
		ChunkChars:   *chunkChars,
		MaxTextBytes: engine.MaxTextLen,
		Clock:        func() time.Time { return newest },
	}
	if !*dedup {
		opts.DedupThreshold = -1
	}
	// The store default for the lexical embedder, as memory.Open sets it (the vector gate follows
	// from the embedder); -vw/-kw/-gate override per recall.
	opts.VectorWeight, opts.KeywordWeight = memory.LexicalVectorWeight, memory.LexicalKeywordWeight
	ctx := context.Background()
	var s *memory.Store
	switch *backend {
	case "engine":
		dir, err := os.MkdirTemp("", "engram-retrieval-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		s, err = memory.Open(dir, memory.OpenOptions{Options: opts, Engine: engine.Options{UnsafeNoSync: !*syncWrites}})
		if err != nil {
			return err
		}
	case "mem":
		if s, err = memory.New(ctx, memory.NewMemBackend(), opts); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown -backend %q", *backend)
	}
	defer s.Close()

	out := Output{Docs: len(ds.Docs), Data: filepath.Join(*data, *prefix), Mode: *mode, Embedder: emb.Fingerprint(), Backend: *backend,
		Dedup: *dedup, Decay: *decay}
	if rmode == memory.ModeHybrid {
		out.Fusion = *fusion
	}
	docOf := map[string]string{} // memory ID -> document ID (the first one, when merged)
	start := time.Now()
	note := func(d beir.Doc, res memory.RememberResult) {
		for i, id := range res.IDs {
			if res.Merged[i] {
				out.Merged++
			} else if _, seen := docOf[id]; !seen {
				docOf[id] = d.ID
			}
		}
	}
	var single []beir.Doc
	if *conversation && *chunkChars < 0 {
		// Documents with a session are the turns of that session's conversation, in file order.
		var order []string
		turns := map[string][]beir.Doc{}
		for _, d := range ds.Docs {
			if d.Session == "" {
				single = append(single, d)
				continue
			}
			if strings.TrimSpace(d.Content()) == "" {
				continue
			}
			if turns[d.Session] == nil {
				order = append(order, d.Session)
			}
			turns[d.Session] = append(turns[d.Session], d)
		}
		for _, sess := range order {
			docs := turns[sess]
			ts := make([]memory.Turn, len(docs))
			for i, d := range docs {
				ts[i] = memory.Turn{Text: truncate(d.Content()), Time: d.Time}
			}
			res, err := s.RememberConversation(ctx, sess, ts, memory.RememberOptions{})
			if err != nil {
				return fmt.Errorf("conversation %s: %w", sess, err)
			}
			if len(res.IDs) != len(docs) {
				return fmt.Errorf("conversation %s: %d memories for %d turns", sess, len(res.IDs), len(docs))
			}
			for i, d := range docs {
				note(d, memory.RememberResult{IDs: res.IDs[i : i+1], Merged: res.Merged[i : i+1]})
			}
			out.Turns += len(docs)
		}
	} else {
		single = ds.Docs
	}
	for _, d := range single {
		res, err := s.Remember(ctx, d.Session, truncate(d.Content()), memory.RememberOptions{Time: d.Time})
		if errors.Is(err, memory.ErrInvalidInput) {
			continue // an empty document: nothing to remember
		}
		if err != nil {
			return fmt.Errorf("document %s: %w", d.ID, err)
		}
		note(d, res)
	}
	out.IngestS = time.Since(start).Seconds()
	if out.Memories, err = s.Count(ctx, nil); err != nil {
		return err
	}

	ro := memory.RecallOptions{K: 10, Mode: rmode, Fusion: rfusion, VectorWeight: *vw, KeywordWeight: *kw, VectorGate: *gate,
		Candidates: *candidates, Decay: memory.Decay{Off: !*decay}, NoTouch: true, AttributeWeight: *attrW, MinScore: *minScore,
		MinRelative: *minRel, Superseded: policy}
	r, err := beir.RunQueries(ds, func(q beir.Query) ([]string, error) {
		o := ro
		o.Session, o.AllSessions = q.Session, q.Session == ""
		if *chunkChars > 0 {
			o.K = 50 // several chunks of one document collapse into one ranked document
		}
		rs, err := s.Recall(ctx, q.Text, o)
		if err != nil {
			return nil, err
		}
		var ids []string
		seen := map[string]bool{}
		for _, res := range rs {
			if d := docOf[res.ID]; !seen[d] {
				seen[d] = true
				ids = append(ids, d)
			}
		}
		return ids, nil
	})
	if err != nil {
		return err
	}
	out.Metrics = beir.Evaluate(r.Ranked, ds.Qrels)
	out.P50US = float64(r.Percentile(50).Nanoseconds()) / 1e3
	out.P99US = float64(r.Percentile(99).Nanoseconds()) / 1e3
	enc := json.NewEncoder(stdout)
	return enc.Encode(out)
}
