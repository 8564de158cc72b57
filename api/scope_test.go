package api

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

// TestScopeIsolation: user_id, agent_id and run_id select exactly their memories in remember,
// recall, list and forget; mem0's search(user_id="alex", run_id="other-run") finds nothing of
// run trip-42.
func TestScopeIsolation(t *testing.T) {
	l := newLocal(t)
	ctx := WithCaller(context.Background(), LocalCaller)
	text := "I am flying to Lisbon on Friday."
	add := func(sc ScopeIDs) string {
		t.Helper()
		res, err := l.Remember(ctx, RememberRequest{ScopeIDs: sc, Text: text})
		if err != nil || len(res.IDs) != 1 || res.Merged[0] {
			t.Fatalf("remember in %+v: %+v %v", sc, res, err)
		}
		return res.IDs[0]
	}
	trip := add(ScopeIDs{UserID: "alex", RunID: "trip-42"})
	other := add(ScopeIDs{UserID: "alex", RunID: "other-run"})
	plain := add(ScopeIDs{UserID: "alex"})
	agent := add(ScopeIDs{UserID: "alex", AgentID: "planner", RunID: "trip-42"})
	agentOnly := add(ScopeIDs{AgentID: "planner"})
	runOnly := add(ScopeIDs{RunID: "trip-42"})
	if m, err := l.Get(ctx, GetRequest{ID: agent}); err != nil || m.Session != "alex" || m.Metadata["agent_id"] != "planner" || m.Metadata["run_id"] != "trip-42" {
		t.Fatalf("stored scope: %+v %v", m, err)
	}
	if m, _ := l.Get(ctx, GetRequest{ID: agentOnly}); m.Session != "planner" || m.Metadata != nil {
		t.Fatalf("agent alone: %+v", m)
	}
	if m, _ := l.Get(ctx, GetRequest{ID: runOnly}); m.Session != "trip-42" || m.Metadata != nil {
		t.Fatalf("run alone: %+v", m)
	}
	ids := func(rs []RecallResult) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s ...string) []string { slices.Sort(s); return s }
	for _, tc := range []struct {
		name string
		req  RecallRequest
		want []string
	}{
		{"the quoted bug", RecallRequest{ScopeIDs: ScopeIDs{UserID: "alex", RunID: "other-run"}}, []string{other}},
		{"a run without memories", RecallRequest{ScopeIDs: ScopeIDs{UserID: "alex", RunID: "nowhere"}}, nil},
		{"a run", RecallRequest{ScopeIDs: ScopeIDs{UserID: "alex", RunID: "trip-42"}}, sorted(trip, agent)},
		{"an agent and a run", RecallRequest{ScopeIDs: ScopeIDs{UserID: "alex", AgentID: "planner", RunID: "trip-42"}}, []string{agent}},
		{"an agent", RecallRequest{Session: "alex", ScopeIDs: ScopeIDs{AgentID: "planner"}}, []string{agent}},
		{"the user", RecallRequest{ScopeIDs: ScopeIDs{UserID: "alex"}}, sorted(trip, other, plain, agent)},
		{"the session", RecallRequest{Session: "alex"}, sorted(trip, other, plain, agent)},
		{"an agent alone", RecallRequest{ScopeIDs: ScopeIDs{AgentID: "planner"}}, []string{agentOnly}},
		{"a run alone", RecallRequest{ScopeIDs: ScopeIDs{RunID: "trip-42"}}, []string{runOnly}},
	} {
		tc.req.Query, tc.req.K, tc.req.NoTouch = "Lisbon", 10, true
		res, err := l.Recall(ctx, tc.req)
		if got := ids(res.Results); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("recall %s: %v %v, want %v", tc.name, got, err, tc.want)
		}
		var list ListRequest
		list.ScopeIDs = tc.req.ScopeIDs
		if tc.req.Session != "" {
			list.Session = &tc.req.Session
		}
		page, err := l.List(ctx, list)
		var got []string
		for _, m := range page.Memories {
			got = append(got, m.ID)
		}
		slices.Sort(got)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("list %s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
	if res, _ := l.Recall(ctx, RecallRequest{ScopeIDs: ScopeIDs{UserID: "alex", RunID: "nowhere"}, Query: "Lisbon"}); res.SessionEmpty {
		t.Error("an empty run of a session with memories said session_empty")
	}

	// Refused: a session and a user that differ, a scope with all_sessions or IDs, metadata
	// naming another run.
	alex := "alex"
	for name, err := range map[string]error{
		"recall session and user": second(l.Recall(ctx, RecallRequest{Session: "bob", ScopeIDs: ScopeIDs{UserID: "alex"}, Query: "x"})),
		"recall all sessions":     second(l.Recall(ctx, RecallRequest{AllSessions: true, ScopeIDs: ScopeIDs{RunID: "r"}, Query: "x"})),
		"list session and user":   second(l.List(ctx, ListRequest{Session: &alex, ScopeIDs: ScopeIDs{UserID: "bob"}})),
		"forget ids and a scope":  second(l.Forget(ctx, ForgetRequest{IDs: []string{trip}, ScopeIDs: ScopeIDs{RunID: "r"}})),
		"remember metadata":       second(l.Remember(ctx, RememberRequest{ScopeIDs: ScopeIDs{UserID: "alex", RunID: "a"}, Text: "x", Metadata: map[string]any{"run_id": "b"}})),
		"remember metadata object": second(l.Remember(ctx, RememberRequest{ScopeIDs: ScopeIDs{UserID: "alex", RunID: "a"}, Text: "x",
			Metadata: map[string]any{"run_id": map[string]any{"x": 1.0}}})),
		"remember metadata list": second(l.Remember(ctx, RememberRequest{ScopeIDs: ScopeIDs{UserID: "alex", AgentID: "a"}, Text: "x",
			Metadata: map[string]any{"agent_id": []any{"a"}}})),
	} {
		if !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}

	// Forget a run: only its memories go, restorably.
	res, err := l.Forget(ctx, ForgetRequest{ScopeIDs: ScopeIDs{UserID: "alex", RunID: "trip-42"}, All: true})
	if err != nil || res.Forgotten != 2 || !res.Restorable {
		t.Fatalf("forget run trip-42: %+v %v", res, err)
	}
	left, _ := l.List(ctx, ListRequest{Session: &alex})
	if len(left.Memories) != 2 {
		t.Fatalf("after forgetting run trip-42, alex has %d memories", len(left.Memories))
	}
	if _, err := l.RestoreForgotten(ctx, RestoreForgottenRequest{IDs: []string{trip, agent}}); err != nil {
		t.Fatal(err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestRememberMessages: a remember of messages answers the distillation's events (texts for a
// reader, IDs only for a writer without the read right), verbatim without infer; Distill
// distills a session's short-term turns.
func TestRememberMessages(t *testing.T) {
	l := newLocal(t)
	ctx := WithCaller(context.Background(), LocalCaller)
	msgs := []memory.Turn{
		{Role: "system", Text: "You are a helpful assistant."},
		{Role: "user", Text: "Hi! I'm Alex and I'm allergic to peanuts."},
		{Role: "assistant", Text: "Nice to meet you, Alex! I'll remember that."},
	}
	res, err := l.Remember(ctx, RememberRequest{ScopeIDs: ScopeIDs{UserID: "alex", RunID: "r1"}, Messages: msgs, Infer: true, Tags: []string{"chat"}})
	if err != nil || res.Turns != 2 || len(res.Events) != 1 || res.Events[0].Text != "I'm Alex and I'm allergic to peanuts." || res.IDs != nil {
		t.Fatalf("infer: %+v %v", res, err)
	}
	m, _ := l.Get(ctx, GetRequest{ID: res.Events[0].ID})
	if m.Session != "alex" || m.Metadata["run_id"] != "r1" || !slices.Equal(m.Tags, []string{"chat"}) || m.Source != memory.DistillSource {
		t.Fatalf("distilled memory %+v", m)
	}
	b, _ := json.Marshal(res)
	var keys map[string]any
	json.Unmarshal(b, &keys)
	if _, ok := keys["events"]; !ok || keys["ids"] != nil {
		t.Fatalf("the messages' answer in JSON: %s", b)
	}
	var back RememberResponse
	if err := json.Unmarshal(b, &back); err != nil || len(back.Events) != 1 || back.Events[0].ID != res.Events[0].ID {
		t.Fatalf("read back: %+v %v", back, err)
	}
	verbatim, err := l.Remember(ctx, RememberRequest{Session: "v", Messages: msgs})
	if err != nil || len(verbatim.Events) != 2 || verbatim.Events[1].Text != msgs[2].Text {
		t.Fatalf("verbatim: %+v %v", verbatim, err)
	}
	// Nothing to remember still answers events, empty.
	none, err := l.Remember(ctx, RememberRequest{Session: "v", Messages: msgs[:1]})
	if b, _ := json.Marshal(none); err != nil || string(b) != `{"turns":0,"events":[]}` {
		t.Fatalf("system messages only: %s %v", b, err)
	}
	for name, req := range map[string]RememberRequest{
		"text and messages":  {Session: "v", Text: "x", Messages: msgs},
		"infer without any":  {Session: "v", Text: "I like tea.", Infer: true},
		"no messages":        {Session: "v", Messages: []memory.Turn{}},
		"message time range": {Session: "v", Messages: []memory.Turn{{Role: "user", Text: "x", Time: minTime.AddDate(-1, 0, 0)}}},
	} {
		if _, err := l.Remember(ctx, req); !errors.Is(err, ErrBadRequest) && !errors.Is(err, memory.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}

	// A key that may write but not read gets the events without texts.
	writer := WithCaller(context.Background(), &Caller{Name: "w", Rights: RightWrite, Scope: Scope{"*"}})
	res, err = l.Remember(writer, RememberRequest{Session: "w", Messages: msgs, Infer: true})
	if err != nil || len(res.Events) != 1 || res.Events[0].ID == "" || res.Events[0].Text != "" {
		t.Fatalf("writer: %+v %v", res, err)
	}
	if b, _ := json.Marshal(res); strings.Contains(string(b), "peanuts") {
		t.Fatalf("a writer's answer holds stored text: %s", b)
	}

	// Distill: the short-term turns not yet distilled, once.
	for _, turn := range msgs[1:] {
		if _, err := l.AddTurn(ctx, "d", turn); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Distill(WithCaller(context.Background(), &Caller{Name: "r", Rights: RightRead, Scope: Scope{"*"}}), "d"); !errors.Is(err, ErrForbidden) {
		t.Fatalf("distill without the write right: %v", err)
	}
	d, err := l.Distill(writer, "d")
	if err != nil || d.Turns != 2 || len(d.Events) != 1 || d.Events[0].Text != "" {
		t.Fatalf("distill: %+v %v", d, err)
	}
	if d, err := l.Distill(ctx, "d"); err != nil || d.Turns != 0 || d.Events == nil || len(d.Events) != 0 {
		t.Fatalf("distill again: %+v %v", d, err)
	}
}
