package memorytest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

// apiCases are the suite's cases for get, list, update, delete, history, user metadata, the
// JSON filter language and fact-keeping merges.
var apiCases = []struct {
	name string
	fn   func(*testing.T, func(*testing.T) memory.Backend)
}{
	{"GetListPaging", testGetListPaging},
	{"UpdateReembedsAndKeepsHistory", testUpdateReembedsAndKeepsHistory},
	{"DeleteUnknownChangesNothing", testDeleteUnknownChangesNothing},
	{"HistoryBoundAndForget", testHistoryBoundAndForget},
	{"MergeKeepsFacts", testMergeKeepsFacts},
	{"OlderWriteKeepsNewerText", testOlderWriteKeepsNewerText},
	{"JSONFiltersEveryField", testJSONFiltersEveryField},
	{"MetadataRoundTrip", testMetadataRoundTrip},
}

func testGetListPaging(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1})
	var ids []string
	for i := range 7 {
		r := Remember(t, s, "u", fmt.Sprintf("memory number %d about topic %c", i, 'a'+i), memory.RememberOptions{})
		ids = append(ids, r.IDs[0])
		if i != 3 { // two memories share a Created time: ties go by ID
			clk.Advance(time.Minute)
		}
	}
	Remember(t, s, "other", "another session's memory", memory.RememberOptions{})
	m, err := s.Lookup(ctx, ids[2])
	if err != nil || m.ID != ids[2] || !strings.Contains(m.Text, "number 2") || len(m.Vector) != 256 {
		t.Fatalf("Lookup: %+v %v", m, err)
	}
	var nf *memory.NotFoundError
	if _, err := s.Lookup(ctx, "nope"); !errors.As(err, &nf) || !errors.Is(err, memory.ErrNotFound) || nf.IDs[0] != "nope" {
		t.Fatalf("Lookup(unknown): %v", err)
	}
	// Page through session u two at a time: every memory once, newest first.
	var got []string
	cursor := ""
	pages := 0
	for {
		p, err := s.List(ctx, memory.ListOptions{Filter: memory.Eq(memory.FieldSession, "u"), Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for i, m := range p.Memories {
			if m.Vector != nil || m.Session != "u" {
				t.Fatalf("listed %+v", m)
			}
			if i > 0 && m.Created.After(p.Memories[i-1].Created) {
				t.Fatalf("page not newest first")
			}
			got = append(got, m.ID)
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	want := slices.Clone(ids)
	slices.Reverse(want)
	// ids[3] and ids[4] share a Created time and sort by ID.
	i3, i4 := slices.Index(want, ids[3]), slices.Index(want, ids[4])
	if (ids[3] < ids[4]) != (i3 < i4) {
		want[i3], want[i4] = want[i4], want[i3]
	}
	if !slices.Equal(got, want) || pages != 4 {
		t.Fatalf("paged %v in %d pages, want %v", got, pages, want)
	}
	if p, err := s.List(ctx, memory.ListOptions{}); err != nil || len(p.Memories) != 8 || p.Next != "" {
		t.Fatalf("List all: %d, next %q, %v", len(p.Memories), p.Next, err)
	}
	for _, bad := range []memory.ListOptions{{Limit: -1}, {Limit: memory.MaxListLimit + 1}, {Cursor: "!!"}, {Cursor: "bm90LWEtY3Vyc29y"}} {
		if _, err := s.List(ctx, bad); !errors.Is(err, memory.ErrInvalidInput) {
			t.Fatalf("List(%+v): %v", bad, err)
		}
	}
}

func testUpdateReembedsAndKeepsHistory(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{})
	r := Remember(t, s, "u", "The user drives a blue bicycle to work.", memory.RememberOptions{Source: "chat", Tags: []string{"travel"},
		Metadata: map[string]any{"confidence": 0.4}})
	id := r.IDs[0]
	created := clk.Now()
	clk.Advance(time.Hour)
	text := "The user takes the tram to the office."
	imp := 0.9
	m, err := s.Update(ctx, id, memory.UpdateOptions{Text: &text, Importance: &imp, Metadata: &map[string]any{"confidence": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Text != text || m.Importance != 0.9 || m.Metadata["confidence"] != 1.0 || !m.Created.Equal(created) || !m.Updated.Equal(clk.Now()) || m.Source != "chat" {
		t.Fatalf("updated %+v", m)
	}
	// Re-embedded: the vector search finds the new words, not the old.
	rs, err := s.Recall(ctx, "tram office", memory.RecallOptions{Session: "u", Mode: memory.ModeVector, NoTouch: true})
	if err != nil || len(rs) != 1 || rs[0].ID != id {
		t.Fatalf("recall of the new text: %v %v", Texts(rs), err)
	}
	if rs, _ := s.Recall(ctx, "bicycle", memory.RecallOptions{Session: "u", Mode: memory.ModeVector, NoTouch: true}); len(rs) != 0 {
		t.Fatalf("the old text still matches: %v", Texts(rs))
	}
	vs, err := s.History(ctx, id)
	if err != nil || len(vs) != 1 {
		t.Fatalf("History: %+v %v", vs, err)
	}
	v := vs[0]
	if v.Version != 1 || v.Change != memory.ChangeUpdate || !v.At.Equal(clk.Now()) || v.Memory.Text != "The user drives a blue bicycle to work." ||
		v.Memory.Metadata["confidence"] != 0.4 || !slices.Equal(v.Memory.Tags, []string{"travel"}) || v.Memory.Importance != memory.DefaultImportance {
		t.Fatalf("version %+v", v)
	}
	// Revert brings version 1 back and records the version it replaced.
	clk.Advance(time.Hour)
	m, err = s.Revert(ctx, id, 1)
	if err != nil || m.Text != "The user drives a blue bicycle to work." || m.Metadata["confidence"] != 0.4 {
		t.Fatalf("Revert: %+v %v", m, err)
	}
	if vs, _ := s.History(ctx, id); len(vs) != 2 || vs[1].Change != memory.ChangeRestore || vs[1].Memory.Text != text {
		t.Fatalf("history after revert: %+v", vs)
	}
	if _, err := s.Revert(ctx, id, 9); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("Revert(9): %v", err)
	}
	// Bad updates change nothing.
	empty, badImp := "  ", 1.5
	for _, o := range []memory.UpdateOptions{{}, {Text: &empty}, {Importance: &badImp}, {Metadata: &map[string]any{"x": []int{1}}}} {
		if _, err := s.Update(ctx, id, o); !errors.Is(err, memory.ErrInvalidInput) {
			t.Fatalf("Update(%+v): %v", o, err)
		}
	}
	if _, err := s.Update(ctx, "nope", memory.UpdateOptions{Text: &text}); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("Update(unknown): %v", err)
	}
	if vs, _ := s.History(ctx, id); len(vs) != 2 {
		t.Fatalf("bad updates wrote history: %d versions", len(vs))
	}
}

func testDeleteUnknownChangesNothing(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, _ := NewStore(t, newBackend(t), memory.Options{})
	a := Remember(t, s, "u", "first memory about apples", memory.RememberOptions{})
	b := Remember(t, s, "u", "second memory about boats", memory.RememberOptions{})
	err := s.Delete(ctx, a.IDs[0], "ghost-1", "ghost-2")
	var nf *memory.NotFoundError
	if !errors.As(err, &nf) || !slices.Equal(nf.IDs, []string{"ghost-1", "ghost-2"}) || !strings.Contains(err.Error(), "ghost-2") {
		t.Fatalf("Delete with unknown IDs: %v", err)
	}
	if n, _ := s.Count(ctx, nil); n != 2 {
		t.Fatalf("a failed Delete removed memories: %d left", n)
	}
	if err := s.Delete(ctx, a.IDs[0], b.IDs[0]); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Count(ctx, nil); n != 0 {
		t.Fatalf("%d left", n)
	}
	if _, err := s.History(ctx, a.IDs[0]); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("History of a deleted memory: %v", err)
	}
}

func testHistoryBoundAndForget(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{HistoryVersions: 3})
	id := Remember(t, s, "u", "version 0 of the note", memory.RememberOptions{}).IDs[0]
	other := Remember(t, s, "u", "an unrelated memory about sailing", memory.RememberOptions{}).IDs[0]
	for i := 1; i <= 5; i++ {
		clk.Advance(time.Minute)
		text := fmt.Sprintf("version %d of the note", i)
		if _, err := s.Update(ctx, id, memory.UpdateOptions{Text: &text}); err != nil {
			t.Fatal(err)
		}
	}
	vs, err := s.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	for _, v := range vs {
		nums = append(nums, v.Version)
		if v.Memory.Text != fmt.Sprintf("version %d of the note", v.Version-1) {
			t.Fatalf("version %d holds %q", v.Version, v.Memory.Text)
		}
	}
	if !slices.Equal(nums, []int{3, 4, 5}) {
		t.Fatalf("kept versions %v, want the newest 3", nums)
	}
	if vs, err := s.History(ctx, other); err != nil || len(vs) != 0 {
		t.Fatalf("History of a never-changed memory: %+v %v", vs, err)
	}
	// Forgetting forgets the history: a new memory with the same ID starts from nothing.
	if n, err := s.ForgetWhere(ctx, memory.Eq(memory.FieldSession, "u")); err != nil || n != 2 {
		t.Fatalf("ForgetWhere: %d %v", n, err)
	}
	if _, err := s.History(ctx, id); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("History after ForgetWhere: %v", err)
	}
	now := clk.Now()
	if err := s.Import(ctx, []memory.Memory{{ID: id, Session: "u", Text: "reborn", Importance: 0.5, Created: now, Updated: now}}); err != nil {
		t.Fatal(err)
	}
	if vs, err := s.History(ctx, id); err != nil || len(vs) != 0 {
		t.Fatalf("history survived forgetting: %+v %v", vs, err)
	}
	// History off keeps none.
	s2, _ := NewStore(t, newBackend(t), memory.Options{HistoryVersions: -1})
	id2 := Remember(t, s2, "u", "a note", memory.RememberOptions{}).IDs[0]
	text := "another note"
	if _, err := s2.Update(ctx, id2, memory.UpdateOptions{Text: &text}); err != nil {
		t.Fatal(err)
	}
	if vs, err := s2.History(ctx, id2); err != nil || len(vs) != 0 {
		t.Fatalf("HistoryVersions -1 kept %+v %v", vs, err)
	}
}

// testMergeKeepsFacts: goldens in English and Chinese for near-duplicates (with the lexical
// embedder: each pair's cosine reaches the merge threshold, which the test checks) that differ
// in a negation, a number, a date or a name.
func testMergeKeepsFacts(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	const (
		merge     = "merge"
		supersede = "supersede"
		two       = "two memories"
	)
	cases := []struct{ name, first, second, want string }{
		{"en not", "Erin is not allergic to peanuts.", "Erin is allergic to peanuts.", supersede},
		{"en never", "Erin is allergic to peanuts.", "Erin is never allergic to peanuts.", supersede},
		{"en n't", "The user's brother Jonas eats spicy Thai curry at the market stall every single Friday evening.",
			"The user's brother Jonas doesn't eat spicy Thai curry at the market stall every single Friday evening.", supersede},
		{"en number", "Tom keeps 2 cats and an old dog at his house in the countryside near Lyon.",
			"Tom keeps 3 cats and an old dog at his house in the countryside near Lyon.", supersede},
		{"en date", "The dentist appointment for the yearly checkup is on 2026-05-03 at the clinic downtown.",
			"The dentist appointment for the yearly checkup is on 2026-05-05 at the clinic downtown.", supersede},
		{"en weekday", "The quarterly planning offsite with the whole product team happens on Monday at the lake house.",
			"The quarterly planning offsite with the whole product team happens on Friday at the lake house.", supersede},
		{"en name", "The new project manager is Bob Smith from the Berlin office.",
			"The new project manager is Carol Smith from the Berlin office.", two},
		{"en same fact", "The user's favourite colour is blue.", "The user's favourite colour is blue!", merge},
		{"zh 不", "小明不喜欢喝咖啡，每天早上都喝茶。", "小明喜欢喝咖啡，每天早上都喝茶。", supersede},
		{"zh 没", "我没有去过北京的故宫博物院。", "我去过北京的故宫博物院。", supersede},
		{"zh 别", "别在会议上提这个预算问题。", "在会议上提这个预算问题。", supersede},
		{"zh number", "我家里养了两只猫和一只狗。", "我家里养了三只猫和一只狗。", supersede},
		{"zh digits", "我家里养了2只猫和1只狗。", "我家里养了3只猫和1只狗。", supersede},
		{"zh weekday", "项目评审会议定在周一下午在三楼。", "项目评审会议定在周五下午在三楼。", supersede},
		{"zh name", "新的项目经理是张伟，来自上海办公室。", "新的项目经理是李娜，来自上海办公室。", two},
		{"zh same fact", "我明天下午三点和王经理开会。", "我明天下午三点要和王经理开会。", merge},
	}
	emb, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if sim := cosine(t, emb, c.first, c.second); sim < memory.DefaultDedupThreshold {
			t.Fatalf("%s: cosine %.3f is below the merge threshold: the golden tests nothing", c.name, sim)
		}
		s, clk := NewStore(t, newBackend(t), memory.Options{Embedder: emb})
		a := Remember(t, s, "u", c.first, memory.RememberOptions{})
		clk.Advance(time.Hour)
		b := Remember(t, s, "u", c.second, memory.RememberOptions{})
		n, _ := s.Count(ctx, nil)
		got := merge
		switch {
		case n == 2 && !b.Merged[0]:
			got = two
		case n == 1 && b.Merged[0] && b.Superseded[0]:
			got = supersede
		case n == 1 && b.Merged[0]:
		default:
			t.Fatalf("%s: %d memories, result %+v", c.name, n, b)
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
			continue
		}
		if got == two {
			continue
		}
		// Either way the memory says the newer text and the older one is in its history.
		m, err := s.Lookup(ctx, a.IDs[0])
		if err != nil || m.Text != c.second {
			t.Fatalf("%s: memory %+v %v", c.name, m, err)
		}
		vs, err := s.History(ctx, a.IDs[0])
		wantChange := memory.ChangeMerge
		if got == supersede {
			wantChange = memory.ChangeSupersede
		}
		if err != nil || len(vs) != 1 || vs[0].Memory.Text != c.first || vs[0].Change != wantChange || !vs[0].At.Equal(clk.Now()) {
			t.Fatalf("%s: history %+v %v", c.name, vs, err)
		}
	}
}

func testOlderWriteKeepsNewerText(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{Embedder: mustLexical(t)})
	t0 := clk.Now()
	a := Remember(t, s, "u", "The user's favourite colour is green.", memory.RememberOptions{})
	// A near-duplicate dated a week earlier (an import of old chat logs, say).
	older := t0.Add(-7 * 24 * time.Hour)
	b := Remember(t, s, "u", "The user's favourite colour is green!", memory.RememberOptions{Time: older})
	if !b.Merged[0] || !b.Older[0] || b.IDs[0] != a.IDs[0] {
		t.Fatalf("older near-duplicate: %+v", b)
	}
	m, err := s.Lookup(ctx, a.IDs[0])
	if err != nil {
		t.Fatal(err)
	}
	if m.Text != "The user's favourite colour is green." || !m.Updated.Equal(t0) || !m.Created.Equal(older) || m.Updated.Before(m.Created) {
		t.Fatalf("older write changed the memory: %+v", m)
	}
	vs, err := s.History(ctx, a.IDs[0])
	if err != nil || len(vs) != 1 || vs[0].Change != memory.ChangeOlder || vs[0].Memory.Text != "The user's favourite colour is green!" || !vs[0].Memory.Updated.Equal(older) {
		t.Fatalf("history %+v %v", vs, err)
	}
	// A newer write still replaces.
	clk.Advance(time.Hour)
	c := Remember(t, s, "u", "The user's favourite colour is green !", memory.RememberOptions{})
	if !c.Merged[0] || c.Older[0] {
		t.Fatalf("newer near-duplicate: %+v", c)
	}
	if m, _ := s.Lookup(ctx, a.IDs[0]); m.Text != "The user's favourite colour is green !" || !m.Updated.Equal(clk.Now()) {
		t.Fatalf("newer write: %+v", m)
	}
}

func mustLexical(t *testing.T) memory.Embedder {
	e, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// testJSONFiltersEveryField runs JSON filters over every field through List, Count, Recall and
// ForgetWhere, each checked against the filter's own Match over all memories.
func testJSONFiltersEveryField(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1})
	t0 := clk.Now()
	Remember(t, s, "a", "garden roses need water", memory.RememberOptions{Source: "chat", Tags: []string{"garden"}, Importance: 0.9,
		Metadata: map[string]any{"project": "apollo", "priority": 3, "done": true}})
	clk.Advance(24 * time.Hour)
	Remember(t, s, "a", "garden tools in the shed", memory.RememberOptions{Source: "doc", Tags: []string{"garden", "tools"},
		Metadata: map[string]any{"project": "zeus", "priority": 1.5, "done": false}})
	clk.Advance(24 * time.Hour)
	Remember(t, s, "b", "garden party on saturday", memory.RememberOptions{Importance: 0.2, Metadata: map[string]any{"priority": "high"}})
	if _, err := s.Recall(ctx, "roses", memory.RecallOptions{Session: "a", K: 1, Mode: memory.ModeKeyword}); err != nil {
		t.Fatal(err) // touches the roses memory: access_count 1, last_access set
	}
	ts := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }
	cases := []struct {
		json string
		want int
	}{
		{`{"session": "a"}`, 2},
		{`{"session": {"ne": "a"}}`, 1},
		{`{"session": {"in": ["a", "b"]}}`, 3},
		{`{"source": "chat"}`, 1},
		{`{"source": {"exists": false}}`, 1},
		{`{"tags": "tools"}`, 1},
		{`{"tags": {"in": ["garden", "x"]}}`, 2},
		{`{"tags": {"exists": true}}`, 2},
		{`{"importance": {"range": {"gte": 0.5}}}`, 2},
		{`{"importance": {"range": {"gt": 0.5}}}`, 1},
		{`{"importance": 0.2}`, 1},
		{`{"created": {"range": {"gte": "` + ts(time.Hour) + `"}}}`, 2},
		{`{"created": {"range": {"lt": "` + ts(24*time.Hour) + `"}}}`, 1},
		{`{"updated": {"range": {"gte": "` + ts(0) + `", "lte": "` + ts(30*time.Hour) + `"}}}`, 2},
		{`{"last_access": {"exists": true}}`, 1},
		{`{"access_count": {"range": {"gte": 1}}}`, 1},
		{`{"access_count": 0}`, 2},
		{`{"metadata.project": "apollo"}`, 1},
		{`{"metadata.project": {"ne": "apollo"}}`, 2},
		{`{"metadata.project": {"exists": true}}`, 2},
		{`{"metadata.priority": {"range": {"gte": 1, "lt": 3}}}`, 1},
		{`{"metadata.priority": {"in": [3, "high"]}}`, 2},
		{`{"metadata.done": true}`, 1},
		{`{"metadata.done": false}`, 1},
		{`{"or": [{"source": "doc"}, {"importance": {"range": {"lte": 0.3}}}]}`, 2},
		{`{"and": [{"tags": "garden"}, {"not": {"metadata.done": true}}]}`, 1},
		{`{"session": "a", "tags": "garden", "metadata.priority": {"range": {"gt": 2}}}`, 1},
		{`{"updated": {"range": {"gte": "1700-01-01T00:00:00Z", "lte": "2200-01-01T00:00:00Z"}}}`, 3},
	}
	all := All(t, s)
	for _, c := range cases {
		f, err := memory.ParseFilter([]byte(c.json))
		if err != nil {
			t.Fatalf("%s: %v", c.json, err)
		}
		want := 0
		for i := range all {
			if f.Match(&all[i]) {
				want++
			}
		}
		if want != c.want {
			t.Fatalf("%s: Match selects %d, golden %d", c.json, want, c.want)
		}
		if n, err := s.Count(ctx, f); err != nil || n != c.want {
			t.Errorf("%s: Count %d %v, want %d", c.json, n, err, c.want)
		}
		p, err := s.List(ctx, memory.ListOptions{Filter: f})
		if err != nil || len(p.Memories) != c.want {
			t.Errorf("%s: List %d %v, want %d", c.json, len(p.Memories), err, c.want)
		}
		rs, err := s.Recall(ctx, "garden", memory.RecallOptions{AllSessions: true, K: 10, Filter: f, NoTouch: true, Mode: memory.ModeKeyword})
		if err != nil || len(rs) != c.want {
			t.Errorf("%s: Recall %d %v, want %d", c.json, len(rs), err, c.want)
		}
		// The filter survives a round trip through its JSON form.
		b, err := f.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		g, err := memory.ParseFilter(b)
		if err != nil {
			t.Fatalf("%s: re-parsing %s: %v", c.json, b, err)
		}
		for i := range all {
			if g.Match(&all[i]) != f.Match(&all[i]) {
				t.Fatalf("%s: round trip %s matches differently", c.json, b)
			}
		}
	}
	// Times beyond what a backend stores (Unix nanoseconds: 1678 to 2262) are refused, not
	// silently wrapped.
	for _, bad := range []string{`{"created": {"range": {"lte": "2999-01-01T00:00:00Z"}}}`, `{"updated": {"range": {"gte": "1500-01-01T00:00:00Z"}}}`} {
		if _, err := memory.ParseFilter([]byte(bad)); !errors.Is(err, memory.ErrInvalidFilter) {
			t.Fatalf("%s: %v", bad, err)
		}
	}
	f, _ := memory.ParseFilter([]byte(`{"metadata.project": {"exists": true}, "importance": {"range": {"lt": 0.95}}}`))
	if n, err := s.ForgetWhere(ctx, f); err != nil || n != 2 {
		t.Fatalf("ForgetWhere: %d %v", n, err)
	}
	if n, _ := s.Count(ctx, nil); n != 1 {
		t.Fatalf("%d left, want 1", n)
	}
}

func testMetadataRoundTrip(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, _ := NewStore(t, newBackend(t), memory.Options{})
	md := map[string]any{"s": "värde 值", "n": 42, "f": -0.125, "b": true, "empty": ""}
	r := Remember(t, s, "u", "a memory with metadata", memory.RememberOptions{Metadata: md})
	m, err := s.Lookup(ctx, r.IDs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"s": "värde 值", "n": 42.0, "f": -0.125, "b": true, "empty": ""}
	if len(m.Metadata) != len(want) {
		t.Fatalf("metadata %v, want %v", m.Metadata, want)
	}
	for k, v := range want {
		if m.Metadata[k] != v {
			t.Fatalf("metadata %q = %#v, want %#v", k, m.Metadata[k], v)
		}
	}
	for _, bad := range []map[string]any{{"": 1}, {"k": math.NaN()}, {"k": []string{"x"}}, {"k": nil}, {"k\n": 1}, {"k": strings.Repeat("x", memory.MaxMetadataValue+1)}} {
		if _, err := s.Remember(ctx, "u", "another memory", memory.RememberOptions{Metadata: bad}); !errors.Is(err, memory.ErrInvalidInput) {
			t.Fatalf("metadata %v: %v", bad, err)
		}
	}
	if n, _ := s.Count(ctx, nil); n != 1 {
		t.Fatalf("bad metadata wrote memories")
	}
}
