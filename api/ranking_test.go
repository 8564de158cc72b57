package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
)

// TestRecallDefaultsMatchLibrary: a request that sets nothing ranks like memory.RecallOptions{}
// (one ranking in every door).
func TestRecallDefaultsMatchLibrary(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	o, err := (&RecallRequest{Session: "s"}).Options(now)
	if err != nil {
		t.Fatal(err)
	}
	var lib memory.RecallOptions
	if o.Mode != lib.Mode || o.Fusion != lib.Fusion || o.Decay != lib.Decay || o.VectorWeight != 0 || o.KeywordWeight != 0 ||
		o.MinScore != lib.MinScore || o.MinRelative != lib.MinRelative || o.Superseded != lib.Superseded || !o.AsOf.IsZero() {
		t.Fatalf("request defaults %+v differ from the library's %+v", o, lib)
	}
	if o, err := (&RecallRequest{Fusion: "rrf"}).Options(now); err != nil || o.Fusion != memory.FusionRRF {
		t.Fatalf("fusion rrf: %+v %v", o, err)
	}
	if _, err := (&RecallRequest{Fusion: "max"}).Options(now); err == nil {
		t.Fatal("unknown fusion accepted")
	}
	// The floors: omitted is the library's default, 0 none, a value itself.
	zero, half := 0.0, 0.5
	if o, _ := (&RecallRequest{MinScore: &zero, MinRelative: &zero}).Options(now); o.MinScore >= 0 || o.MinRelative >= 0 {
		t.Fatalf("min_score 0 and min_relative 0: %v %v, want no floors", o.MinScore, o.MinRelative)
	}
	if o, _ := (&RecallRequest{MinScore: &half, MinRelative: &half}).Options(now); o.MinScore != 0.5 || o.MinRelative != 0.5 {
		t.Fatalf("floors 0.5: %v %v", o.MinScore, o.MinRelative)
	}
	for in, want := range map[string]time.Time{
		"2026-01-31":           time.Date(2026, 1, 31, 23, 59, 59, 999999999, time.UTC),
		"2026-01-31T08:00:00Z": time.Date(2026, 1, 31, 8, 0, 0, 0, time.UTC),
		"30d":                  now.AddDate(0, 0, -30),
	} {
		if o, err := (&RecallRequest{AsOf: in}).Options(now); err != nil || !o.AsOf.Equal(want) {
			t.Errorf("as_of %q: %v %v, want %v", in, o.AsOf, err, want)
		}
	}
	for in, want := range map[string]memory.SupersededPolicy{"": memory.SupersededDemote, "demote": memory.SupersededDemote,
		"hide": memory.SupersededHide, "keep": memory.SupersededKeep} {
		if o, err := (&RecallRequest{Superseded: in}).Options(now); err != nil || o.Superseded != want {
			t.Errorf("superseded %q: %v %v", in, o.Superseded, err)
		}
	}
	for name, req := range map[string]RecallRequest{"as_of": {AsOf: "last tuesday"}, "superseded": {Superseded: "drop"}} {
		if _, err := req.Options(now); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestScoreFloorDefaults: a request without min_score and min_relative drops what scores under
// the library's floors; 0 turns them off.
func TestScoreFloorDefaults(t *testing.T) {
	l := newLocal(t)
	// The others share a word ("in") or character n-grams only: under a fifth of the best.
	for _, text := range []string{"Alice prefers green tea in the morning.", "Bob lives in Oslo.", "Carol works in Lima.",
		"Mornings are for greenery and teapots.", "Teatime in Greenland."} {
		remember(t, l, "s", text)
	}
	ctx := WithCaller(context.Background(), LocalCaller)
	def, err := l.Recall(ctx, RecallRequest{Session: "s", Query: "green tea in the morning", K: 10, NoTouch: true})
	if err != nil || len(def.Results) == 0 {
		t.Fatal(def, err)
	}
	best := def.Results[0].Score.Final
	for _, r := range def.Results {
		if r.Score.Final < memory.DefaultMinScore || r.Score.Final < memory.DefaultMinRelative*best {
			t.Errorf("default floors kept %q at %.3f (best %.3f)", r.Text, r.Score.Final, best)
		}
	}
	zero := 0.0
	all, err := l.Recall(ctx, RecallRequest{Session: "s", Query: "green tea in the morning", K: 10, NoTouch: true, MinScore: &zero, MinRelative: &zero})
	if err != nil || len(all.Results) <= len(def.Results) {
		t.Fatalf("without floors %d results, with the defaults %d: %v", len(all.Results), len(def.Results), err)
	}
}
