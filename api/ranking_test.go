package api

import (
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
