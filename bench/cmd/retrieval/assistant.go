package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/engramdb/engram/bench/beir"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
)

// The assistant evaluation (-assistant) reads a personal-assistant set such as
// shared/datasets/text/assistant-dev: a BEIR folder whose documents are memories with a session
// and a time, plus annotations.json naming each question's kind (overlap, paraphrase, change),
// the stale memory of each change question, the small-talk memories and the pairs of memories
// where a newer one changes an older one's fact. It uses the library as an assistant would, with
// every default: memory.Open in a temporary directory (lexical embedder, de-duplication,
// supersede detection), one Remember per memory in time order with the memory's time, one
// Recall per question in the question's session with RecallOptions{Session, K} and nothing else
// (unless -attr, -minscore, -minrel or -superseded say otherwise). The clock is -now (default:
// the day after the newest memory).

// annotations is annotations.json.
type annotations struct {
	Queries map[string]struct {
		Lang  string   `json:"lang"`
		Kind  string   `json:"kind"`
		Stale []string `json:"stale"`
	} `json:"queries"`
	SmallTalk   []string    `json:"small_talk"`
	ChangePairs [][2]string `json:"change_pairs"`
}

// AssistantOutput is what -assistant prints.
type AssistantOutput struct {
	Data string `json:"data"`
	// Door is "library" or the URL of the server written and asked through.
	Door string `json:"door"`
	Now  string `json:"now"`
	K    int    `json:"k"`
	// ChangeWins counts the change questions whose gold (newer) memory is in the top K above the
	// stale one (or with the stale one absent), out of ChangeTotal.
	ChangeWins  int `json:"change_wins"`
	ChangeTotal int `json:"change_total"`
	// ChangeStaleShown counts the change questions whose stale memory is in the top K.
	ChangeStaleShown int `json:"change_stale_shown"`
	// Hit@K by kind (any gold memory in the top K), and paraphrase by language.
	// HitShared is hit@K over the questions that share words with their answer: overlap and
	// change questions together (the figure issue 24 states).
	HitShared      float64 `json:"hit_shared"`
	HitOverlap     float64 `json:"hit_overlap"`
	HitChange      float64 `json:"hit_change"`
	HitParaphrase  float64 `json:"hit_paraphrase"`
	HitParaEN      float64 `json:"hit_paraphrase_en"`
	HitParaZH      float64 `json:"hit_paraphrase_zh"`
	Results        int     `json:"results"`
	Under005       int     `json:"results_under_0.05"`
	SmallTalkShown int     `json:"small_talk_shown"`
	CrossSession   int     `json:"cross_session"`
	// Supersede detection at write time against the annotated change pairs: Predicted pairs
	// (older, newer) recorded by Remember (in place or as a link), of which Correct are annotated.
	SupersedePredicted int      `json:"supersede_predicted"`
	SupersedeCorrect   int      `json:"supersede_correct"`
	SupersedeGold      int      `json:"supersede_gold"`
	SupersedePrecision float64  `json:"supersede_precision"`
	SupersedeRecall    float64  `json:"supersede_recall"`
	FalseSupersedes    []string `json:"false_supersedes,omitempty"`
	MissedSupersedes   []string `json:"missed_supersedes,omitempty"`
	Merged             int      `json:"merged"`
	Memories           int      `json:"memories"`
}

func runAssistant(ctx context.Context, data, now, server string, noSupersede bool, base memory.RecallOptions, verbose bool, stdout, stderr io.Writer) error {
	k := base.K
	ds, err := beir.Load(data, "")
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(data, "annotations.json"))
	if err != nil {
		return err
	}
	var ann annotations
	if err := json.Unmarshal(raw, &ann); err != nil {
		return fmt.Errorf("annotations.json: %w", err)
	}
	docs := slices.Clone(ds.Docs)
	sort.SliceStable(docs, func(i, j int) bool { return docs[i].Time.Before(docs[j].Time) })
	var clock time.Time
	if now != "" {
		if clock, err = time.Parse(time.RFC3339, now); err != nil {
			if clock, err = time.Parse(time.DateOnly, now); err != nil {
				return fmt.Errorf("-now %q: want RFC 3339 or YYYY-MM-DD", now)
			}
		}
	} else {
		for _, d := range docs {
			if d.Time.After(clock) {
				clock = d.Time
			}
		}
		clock = clock.Truncate(24 * time.Hour).Add(24 * time.Hour)
	}
	cur := clock
	var s assistantDoor
	if server != "" {
		// A server keeps its own clock: memories carry their times, recall runs at the server's now.
		s, clock = newHTTPDoor(server), time.Now()
	} else {
		dir, err := os.MkdirTemp("", "engram-assistant-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		st, err := memory.Open(dir, memory.OpenOptions{Options: memory.Options{Clock: func() time.Time { return cur }, NoSupersede: noSupersede},
			Engine: engine.Options{UnsafeNoSync: true}})
		if err != nil {
			return err
		}
		defer st.Close()
		s = libraryDoor{st}
	}

	out := AssistantOutput{Data: data, Now: clock.UTC().Format(time.RFC3339), K: k, SupersedeGold: len(ann.ChangePairs)}
	docByText := map[string]string{}
	docByID := map[string]string{} // memory ID -> the document whose text it holds
	type pair struct{ old, new string }
	predicted := map[pair]bool{}
	for _, d := range docs {
		cur = d.Time // the store's clock at the time of writing, as a live assistant's would be
		docByText[strings.TrimSpace(d.Content())] = d.ID
		res, err := s.remember(ctx, d.Session, d.Content(), d.Time)
		if err != nil {
			return fmt.Errorf("document %s: %w", d.ID, err)
		}
		for i, id := range res.IDs {
			if res.Merged[i] {
				out.Merged++
				if res.Superseded[i] {
					predicted[pair{docByID[id], d.ID}] = true
				}
			}
			if !res.Older[i] {
				docByID[id] = d.ID
			}
			for _, old := range supersedes(res, i) {
				predicted[pair{docByID[old], d.ID}] = true
			}
		}
	}
	cur = clock
	if out.Memories, err = s.count(ctx); err != nil {
		return err
	}
	gold := map[pair]bool{}
	for _, p := range ann.ChangePairs {
		gold[pair{p[0], p[1]}] = true
	}
	for p := range predicted {
		out.SupersedePredicted++
		if gold[p] {
			out.SupersedeCorrect++
		} else {
			out.FalseSupersedes = append(out.FalseSupersedes, p.old+">"+p.new)
		}
	}
	for p := range gold {
		if !predicted[p] {
			out.MissedSupersedes = append(out.MissedSupersedes, p.old+">"+p.new)
		}
	}
	slices.Sort(out.FalseSupersedes)
	slices.Sort(out.MissedSupersedes)
	out.SupersedePrecision = ratio(out.SupersedeCorrect, out.SupersedePredicted)
	out.SupersedeRecall = ratio(out.SupersedeCorrect, out.SupersedeGold)
	if server != "" {
		// The HTTP answer to remember does not say which memory a chunk superseded.
		out.Door, out.SupersedeGold, out.MissedSupersedes = server, 0, nil
	} else {
		out.Door = "library"
	}

	smallTalk := map[string]bool{}
	for _, id := range ann.SmallTalk {
		smallTalk[id] = true
	}
	hits := map[string][2]int{} // bucket -> (hits, questions)
	count := func(bucket string, hit bool) {
		h := hits[bucket]
		h[1]++
		if hit {
			h[0]++
		}
		hits[bucket] = h
	}
	for _, q := range ds.Queries {
		a, ok := ann.Queries[q.ID]
		if !ok {
			continue
		}
		o := base
		o.Session = q.Session
		rs, err := s.recall(ctx, q.Text, o)
		if err != nil {
			return fmt.Errorf("question %s: %w", q.ID, err)
		}
		var ranked []string
		for _, r := range rs {
			d, ok := docByText[strings.TrimSpace(r.Text)]
			if !ok {
				d = docByID[r.ID]
			}
			ranked = append(ranked, d)
			out.Results++
			if r.Score.Final < 0.05 {
				out.Under005++
			}
			if r.Session != q.Session {
				out.CrossSession++
			}
			if smallTalk[d] {
				out.SmallTalkShown++
			}
		}
		goldRank := -1
		for i, d := range ranked {
			if ds.Qrels[q.ID][d] > 0 && goldRank < 0 {
				goldRank = i
			}
		}
		count(a.Kind, goldRank >= 0)
		if a.Kind != "paraphrase" {
			count("shared", goldRank >= 0)
		}
		if a.Kind == "paraphrase" {
			count("paraphrase-"+a.Lang, goldRank >= 0)
		}
		verdict := ""
		if a.Kind == "change" {
			out.ChangeTotal++
			staleRank := -1
			for i, d := range ranked {
				if slices.Contains(a.Stale, d) {
					staleRank = i
					break
				}
			}
			if staleRank >= 0 {
				out.ChangeStaleShown++
			}
			if goldRank >= 0 && (staleRank < 0 || goldRank < staleRank) {
				out.ChangeWins++
				verdict = "win"
			} else {
				verdict = "LOSS"
			}
		}
		if verbose {
			fmt.Fprintf(stderr, "%s %-10s %-4s %q\n", q.ID, a.Kind, verdict, q.Text)
			for i, r := range rs {
				mark := " "
				if ds.Qrels[q.ID][ranked[i]] > 0 {
					mark = "*"
				} else if slices.Contains(a.Stale, ranked[i]) {
					mark = "x"
				}
				fmt.Fprintf(stderr, "   %s %s %.3f (fused %.3f kw %.2f vec %.2f attr %.2f decay %.3f cur %.1f) %s %q\n", mark, ranked[i], r.Score.Final, r.Score.Fused, r.Score.KeywordNorm, r.Score.Vector, r.Score.Attribute, r.Score.Decay, r.Score.Current, staleNote(r), r.Text)
			}
		}
	}
	h := func(b string) float64 { return ratio(hits[b][0], hits[b][1]) }
	out.HitShared = h("shared")
	out.HitOverlap, out.HitChange, out.HitParaphrase = h("overlap"), h("change"), h("paraphrase")
	out.HitParaEN, out.HitParaZH = h("paraphrase-en"), h("paraphrase-zh")
	return json.NewEncoder(stdout).Encode(out)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// supersedes returns the memories chunk i of res marked as superseded (other than in place).
func supersedes(res memory.RememberResult, i int) []string {
	if i < len(res.Supersedes) && res.Supersedes[i] != "" {
		return []string{res.Supersedes[i]}
	}
	return nil
}

// staleNote describes a result's standing against newer memories.
func staleNote(r memory.Result) string {
	if r.SupersededBy != "" {
		return "[superseded]"
	}
	return ""
}
