package weaviate

import (
	"math"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
)

func TestTranslate(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		f     *memory.Filter
		want  string
		exact bool
	}{
		{"nil", nil, "", true},
		{"session", memory.Eq(memory.FieldSession, "alice"), `{operator: Equal, path: ["session"], valueText: "s:alice"}`, true},
		{"empty session", memory.Eq(memory.FieldSession, ""), `{operator: Equal, path: ["session"], valueText: "s:"}`, true},
		{"in", memory.In(memory.FieldSource, "a", "b"), `{operands: [{operator: Equal, path: ["source"], valueText: "s:a"}, {operator: Equal, path: ["source"], valueText: "s:b"}], operator: Or}`, true},
		{"tag", memory.Eq(memory.FieldTag, `q"x`), `{operator: ContainsAny, path: ["tags"], valueText: ["t:q\"x"]}`, true},
		{"not session", memory.Not(memory.Eq(memory.FieldSession, "x")), `{operator: NotEqual, path: ["session"], valueText: "s:x"}`, true},
		{"range", memory.Range(memory.FieldImportance, 0.5, math.Inf(1)), `{operator: GreaterThanEqual, path: ["importance"], valueNumber: 0.5}`, true},
		{"open range", memory.Range(memory.FieldAccessCount, math.Inf(-1), math.Inf(1)), ``, true},
		{"exists number", memory.Exists(memory.FieldAccessCount), `{operands: [{operator: GreaterThan, path: ["access_count"], valueNumber: 0}, {operator: LessThan, path: ["access_count"], valueNumber: 0}], operator: Or}`, true},
		{"time range widened", memory.TimeRange(memory.FieldUpdated, time.Time{}, t0), `{operands: [{operator: IsNull, path: ["updated"], valueBoolean: false}, {operator: LessThanEqual, path: ["updated"], valueDate: "2026-01-02T03:04:06Z"}], operator: And}`, false},
		{"exists time", memory.Exists(memory.FieldLastAccess), `{operator: IsNull, path: ["last_access"], valueBoolean: false}`, true},
		{"and keeps exact part", memory.And(memory.Eq(memory.FieldSession, "a"), memory.Not(memory.Exists(memory.FieldTag))), `{operator: Equal, path: ["session"], valueText: "s:a"}`, false},
		{"or with inexact part", memory.Or(memory.Eq(memory.FieldSession, "a"), memory.Not(memory.Exists(memory.FieldTag))), ``, false},
		{"tag exists not pushed", memory.Exists(memory.FieldTag), ``, false},
	} {
		w, exact := translate(tc.f)
		got := ""
		if w != nil {
			got = renderWhere(w)
		}
		if got != tc.want || exact != tc.exact {
			t.Errorf("%s:\n got %s (exact %v)\nwant %s (exact %v)", tc.name, got, exact, tc.want, tc.exact)
		}
	}
}

func TestClassNamesAndIDs(t *testing.T) {
	b := &Backend{opts: Options{ClassPrefix: "Engram"}}
	a, c := b.className("memories"), b.className("memories.1")
	if a == c || a[:16] != "Engram_memories_" {
		t.Fatalf("class names %q %q", a, c)
	}
	if b.className("Memories") == a {
		t.Fatal("names differing in case share a class")
	}
	if x1, x2 := objectID("C", "x"), objectID("C", "x"); x1 != x2 || x1 == objectID("C", "y") || x1 == objectID("D", "x") {
		t.Fatal("object IDs are not a function of class and key")
	}
	if id := objectID("C", "x"); len(id) != 36 || id[14] != '5' {
		t.Fatalf("object ID %q is not a version-5 UUID", id)
	}
	for _, p := range []string{"", "engram", "Eng-ram", "Éngram"} {
		if validPrefix(p) {
			t.Errorf("prefix %q accepted", p)
		}
	}
}

func TestNewClientRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"ftp://x:1", "http://", "weaviate://"} {
		if _, err := newClient(u, "", time.Second); err == nil {
			t.Errorf("newClient(%q) accepted", u)
		}
	}
	c, err := newClient("weaviate://127.0.0.1:8080", "", time.Second)
	if err != nil || c.base.String() != "http://127.0.0.1:8080" {
		t.Fatalf("%v %v", c, err)
	}
}
