package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/bench/beir"
	"github.com/engramdb/engram/internal/servetest"
)

// TestAssistantTargets runs the assistant evaluation on shared/datasets/text/assistant-dev with
// every default and holds the figures of bench/results/memory-semantics.md: the newer memory
// above the stale one for at least 19 of the 20 change questions, hit@5 at least 0.95 over the
// questions that share words with their answer, no result under 0.05, nothing from another
// session, and supersede detection at least 0.9 precise. It runs with the clock the day after
// the newest memory and a year later, where every memory sits deep in decay.
func TestAssistantTargets(t *testing.T) {
	dir := assistantDev(t)
	for _, now := range []string{"", "2027-10-01"} {
		var out bytes.Buffer
		if err := run([]string{"-assistant", "-data", dir, "-now", now}, &out); err != nil {
			t.Fatal(err)
		}
		var o AssistantOutput
		if err := json.Unmarshal(out.Bytes(), &o); err != nil {
			t.Fatal(err)
		}
		t.Logf("now %s: %s", o.Now, out.String())
		if o.ChangeWins < 19 || o.HitShared < 0.95 || o.Under005 != 0 || o.CrossSession != 0 || o.SupersedePrecision < 0.9 || o.Results == 0 {
			t.Errorf("now %s: change %d/%d, hit@5 shared %.3f, %d results under 0.05, %d from another session, supersede precision %.2f",
				o.Now, o.ChangeWins, o.ChangeTotal, o.HitShared, o.Under005, o.CrossSession, o.SupersedePrecision)
		}
	}
}

func assistantDev(t *testing.T) string {
	root, ok := beir.FindDatasets()
	if !ok {
		t.Skip("shared/datasets not found")
	}
	dir := filepath.Join(root, "text", "assistant-dev")
	if _, err := os.Stat(filepath.Join(dir, "annotations.json")); err != nil {
		t.Skip("assistant-dev not found")
	}
	return dir
}

// TestAssistantTargetsThroughServe holds the same targets through `memctl serve` with its
// defaults, as an assistant talking HTTP would meet them: each memory written over the API in
// time order with its time, each question a recall with the session and k alone.
func TestAssistantTargetsThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memctl")
	}
	dir := assistantDev(t)
	url, logs := servetest.Serve(t, servetest.Build(t))
	var out bytes.Buffer
	if err := run([]string{"-assistant", "-data", dir, "-server", url}, &out); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	var o AssistantOutput
	if err := json.Unmarshal(out.Bytes(), &o); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", out.String())
	if o.Memories != 200 || o.ChangeWins < 19 || o.HitShared < 0.95 || o.Under005 != 0 || o.CrossSession != 0 || o.Results == 0 {
		t.Errorf("through memctl serve: %d memories, change %d/%d, hit@5 shared %.3f, %d results under 0.05, %d from another session",
			o.Memories, o.ChangeWins, o.ChangeTotal, o.HitShared, o.Under005, o.CrossSession)
	}
}
