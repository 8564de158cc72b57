package memory

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

// TestScopeMapping: the session is user_id, else agent_id, else run_id; the IDs it does not take
// are the metadata and the filter.
func TestScopeMapping(t *testing.T) {
	for _, tc := range []struct {
		sc            Scope
		session, from string
		md            map[string]any
	}{
		{Scope{}, "", "", nil},
		{Scope{User: "u"}, "u", "user_id", nil},
		{Scope{User: "u", Agent: "a", Run: "r"}, "u", "user_id", map[string]any{MetaAgentID: "a", MetaRunID: "r"}},
		{Scope{User: "u", Run: "r"}, "u", "user_id", map[string]any{MetaRunID: "r"}},
		{Scope{Agent: "a", Run: "r"}, "a", MetaAgentID, map[string]any{MetaRunID: "r"}},
		{Scope{Agent: "a"}, "a", MetaAgentID, nil},
		{Scope{Run: "r"}, "r", MetaRunID, nil},
	} {
		s, from := tc.sc.Session()
		md := tc.sc.Metadata()
		if s != tc.session || from != tc.from || !maps.Equal(md, tc.md) {
			t.Errorf("%+v: session %q from %q, metadata %v", tc.sc, s, from, md)
		}
		f := tc.sc.Filter()
		if (f == nil) != (len(tc.md) == 0) {
			t.Errorf("%+v: filter %v for metadata %v", tc.sc, f, tc.md)
		}
		if f != nil && (!f.Match(&Memory{Metadata: tc.md}) || f.Match(&Memory{})) {
			t.Errorf("%+v: the filter does not select exactly the scope's memories", tc.sc)
		}
		if got := ScopeOf(md); got.Agent != md[MetaAgentID] && md[MetaAgentID] != nil || got.Run != md[MetaRunID] && md[MetaRunID] != nil {
			t.Errorf("%+v: ScopeOf %+v", tc.sc, got)
		}
	}
}

// TestScopeIsolation: memories of one user in two runs (and without a run) never merge, a recall
// filtered by one run finds only its memories (mem0's search(user_id="alex", run_id="other-run")
// must not return what was added under run_id="trip-42"), an update keeps the scope, and a
// distillation in one run changes no memory of another.
func TestScopeIsolation(t *testing.T) {
	ctx := context.Background()
	for name, b := range map[string]func(t *testing.T) Backend{
		"mem": func(*testing.T) Backend { return NewMemBackend() },
		"engine": func(t *testing.T) Backend {
			db, err := engine.Open(t.TempDir(), engine.Options{UnsafeNoSync: true, CompactInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			b := NewEngineBackend(db)
			t.Cleanup(func() { _ = b.Close() })
			return b
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := New(ctx, b(t), Options{Embedder: lexicalEmbedder(t), Clock: func() time.Time { return fixtureEpoch }})
			if err != nil {
				t.Fatal(err)
			}
			trip := Scope{User: "alex", Run: "trip-42"}
			other := Scope{User: "alex", Run: "other-run"}
			session, _ := trip.Session()
			text := "I am flying to Lisbon on Friday."
			a, err := s.Remember(ctx, session, text, RememberOptions{Metadata: trip.Metadata()})
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.Remember(ctx, session, text, RememberOptions{Metadata: other.Metadata()})
			if err != nil || b.Merged[0] || b.IDs[0] == a.IDs[0] {
				t.Fatalf("the same text in another run merged: %+v %v", b, err)
			}
			c, err := s.Remember(ctx, session, text, RememberOptions{})
			if err != nil || c.Merged[0] {
				t.Fatalf("the same text without a run merged into a run's memory: %+v %v", c, err)
			}
			d, err := s.Remember(ctx, session, text, RememberOptions{Metadata: trip.Metadata()})
			if err != nil || !d.Merged[0] || d.IDs[0] != a.IDs[0] {
				t.Fatalf("the same text in the same run did not merge: %+v %v", d, err)
			}
			recall := func(sc Scope) []string {
				t.Helper()
				rs, err := s.Recall(ctx, "Lisbon", RecallOptions{Session: session, Filter: sc.Filter(), NoTouch: true})
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, r := range rs {
					ids = append(ids, r.ID)
				}
				return ids
			}
			if got := recall(other); len(got) != 1 || got[0] != b.IDs[0] {
				t.Fatalf("recall in run other-run: %v, want only %s", got, b.IDs[0])
			}
			if got := recall(Scope{User: "alex", Run: "nowhere"}); len(got) != 0 {
				t.Fatalf("recall in a run without memories: %v", got)
			}
			if got := recall(Scope{User: "alex"}); len(got) != 3 {
				t.Fatalf("recall for the user without a run: %v, want all 3", got)
			}
			md := map[string]any{"k": "v"}
			m, err := s.Update(ctx, a.IDs[0], UpdateOptions{Metadata: &md})
			if err != nil || m.Metadata[MetaRunID] != "trip-42" || m.Metadata["k"] != "v" {
				t.Fatalf("update dropped the scope: %+v %v", m.Metadata, err)
			}

			// A distillation in run other-run is shown, and may change, only that run's memories.
			var seen DistillInput
			s.opts.Distiller = scriptedDistiller{seen: &seen, props: []Proposal{{Event: EventAdd, Text: "I am flying to Porto on Friday.", Turn: 0}}}
			res, err := s.RememberMessages(ctx, session, []Turn{{Role: "user", Text: "Change of plan: I am flying to Porto on Friday, not Lisbon."}},
				MessagesOptions{Infer: true, RememberOptions: RememberOptions{Metadata: other.Metadata()}})
			if err != nil || res.Fallback != "" {
				t.Fatalf("%+v %v", res, err)
			}
			for _, e := range seen.Existing {
				if e.Metadata[MetaRunID] != "other-run" {
					t.Fatalf("the distiller was shown %q of another scope (%v)", e.ID, e.Metadata)
				}
			}
			ms, _ := s.Get(ctx, res.Events[0].ID)
			if len(ms) != 1 || ms[0].Metadata[MetaRunID] != "other-run" {
				t.Fatalf("distilled memory %+v", ms)
			}

			// A changed fact supersedes within its scope only.
			old, err := s.Remember(ctx, session, "My flight leaves at 7:40.", RememberOptions{Metadata: trip.Metadata(), Time: fixtureEpoch.Add(-time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			elsewhere, err := s.Remember(ctx, session, "Update: my flight now leaves at 9:15.", RememberOptions{Metadata: other.Metadata()})
			if err != nil || elsewhere.Supersedes[0] != "" {
				t.Fatalf("a change in run other-run superseded %q of run trip-42: %v", elsewhere.Supersedes, err)
			}
			here, err := s.Remember(ctx, session, "Update: my flight now leaves at 9:15.", RememberOptions{Metadata: trip.Metadata()})
			if err != nil || (here.Supersedes[0] != old.IDs[0] && !(here.Merged[0] && here.Superseded[0])) {
				t.Fatalf("the same change in run trip-42 did not supersede: %+v %v", here, err)
			}

			before, _ := s.Count(ctx, nil)
			for _, bad := range []map[string]any{{MetaRunID: 7.0}, {MetaAgentID: ""}, {MetaRunID: true}} {
				if _, err := s.Remember(ctx, session, "x", RememberOptions{Metadata: bad}); !errors.Is(err, ErrInvalidInput) {
					t.Errorf("metadata %v: %v", bad, err)
				}
			}
			if after, _ := s.Count(ctx, nil); after != before {
				t.Fatal("a refused scope wrote memories")
			}
		})
	}
}
