package memory

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseFilterErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, "empty filter"},
		{`[]`, "want an object"},
		{`{}`, "empty object"},
		{`{"sesion": "a"}`, `unknown field "sesion"`},
		{`{"session": 3}`, "takes a string, got a number"},
		{`{"session": "a", "session": "b"}`, `key "session" appears twice`},
		{`{"session": {"like": "a"}}`, `unknown operator "like"`},
		{`{"session": {}}`, "empty condition"},
		{`{"session": {"range": {"gte": 1}}}`, "string field"},
		{`{"importance": "high"}`, "want a number, got a string"},
		{`{"importance": {"range": {"gte": 0.8, "lte": 0.2}}}`, "empty range"},
		{`{"importance": {"range": {"from": 1}}}`, `unknown bound "from"`},
		{`{"importance": {"range": {"gte": 1e999}}}`, "out of range"},
		{`{"created": {"range": {"gte": "yesterday"}}}`, "not an RFC 3339 time"},
		{`{"created": {"range": {"gte": "0001-01-01T00:00:00Z"}}}`, "zero time"},
		{`{"created": 5}`, "want an RFC 3339 time string"},
		{`{"tags": {"in": []}}`, "want an array of 1..1000 values"},
		{`{"tags": {"in": "x"}}`, "want an array"},
		{`{"tags": {"exists": "yes"}}`, "want true or false"},
		{`{"and": []}`, "non-empty array"},
		{`{"and": {}}`, "non-empty array"},
		{`{"or": [{"session": "a"}, 3]}`, "filter.or[1]: want an object"},
		{`{"not": []}`, "want an object"},
		{`{"metadata.": 1}`, "unknown field"},
		{`{"metadata.k": null}`, "got null"},
		{`{"metadata.k": [1]}`, "got an array"},
		{`{"metadata.k": {"range": {"gte": "2026-01-01T00:00:00Z"}}}`, "want a number"},
		{`{"session": "a"} {}`, "trailing data"},
		{`{"session": "a"`, "EOF"},
		{strings.Repeat(`{"not":`, 40) + `{"session":"a"}` + strings.Repeat(`}`, 40), "nested deeper than 32"},
		{strings.Repeat(`[`, 200), "nested deeper than 100"},
	}
	for _, c := range cases {
		f, err := ParseFilter([]byte(c.in))
		if err == nil || !errors.Is(err, ErrInvalidFilter) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseFilter(%.60s) = %v, %v; want an ErrInvalidFilter containing %q", c.in, f, err, c.want)
		}
	}
}

func TestParseFilterForms(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	m := Memory{Session: "a", Source: "chat", Tags: []string{"x", "y"}, Importance: 0.5, Created: t0, Updated: t0,
		AccessCount: 2, Metadata: map[string]any{"n": 2.0, "s": "v", "b": false}}
	cases := []struct {
		in   string
		want bool
	}{
		{`{"session": "a"}`, true},
		{`{"session": {"eq": "b"}}`, false},
		{`{"tags": "y"}`, true},
		{`{"tags": {"ne": "y"}}`, false},
		{`{"importance": {"range": {"gt": 0.5}}}`, false},
		{`{"importance": {"range": {"gte": 0.5, "lt": 0.6}}}`, true},
		{`{"access_count": {"in": [1, 2]}}`, true},
		{`{"created": "2026-03-01T00:00:00Z"}`, true},
		{`{"created": {"range": {"gt": "2026-03-01T00:00:00Z"}}}`, false},
		{`{"created": {"range": {"lte": "2026-03-01T01:00:00+01:00"}}}`, true},
		{`{"last_access": {"exists": false}}`, true},
		{`{"metadata.n": 2}`, true},
		{`{"metadata.n": "2"}`, false},
		{`{"metadata.b": false}`, true},
		{`{"metadata.b": "false"}`, true},
		{`{"metadata.missing": {"ne": "x"}}`, true},
		{`{"metadata.s": {"in": ["u", "v"]}}`, true},
		{`{"source": "chat", "tags": {"in": ["z"]}}`, false},
		{`{"or": [{"source": "web"}, {"not": {"session": "b"}}]}`, true},
	}
	for _, c := range cases {
		f, err := ParseFilter([]byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := f.Match(&m); got != c.want {
			t.Errorf("%s: Match = %v, want %v", c.in, got, c.want)
		}
	}
}

// FuzzParseFilter: no input panics; a filter that parses is valid, renders to JSON that
// parses back to a filter rendering the same way.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{`{"session":"a"}`, `{"and":[{"tags":{"in":["a","b"]}},{"not":{"importance":{"range":{"gte":0.5}}}}]}`,
		`{"created":{"range":{"gt":"2026-01-01T00:00:00Z","lte":"2027-01-01T00:00:00.5Z"}}}`, `{"metadata.k":{"in":[1,"x",true]}}`,
		`{"or":[{"last_access":{"exists":false}},{"access_count":3}]}`, `{"source":{"ne":""}}`} {
		f.Add([]byte(s))
	}
	m := Memory{Session: "a", Tags: []string{"a"}, Importance: 0.5, Created: time.Unix(1.8e9, 0), Metadata: map[string]any{"k": 1.0}}
	f.Fuzz(func(t *testing.T, data []byte) {
		flt, err := ParseFilter(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidFilter) {
				t.Fatalf("error %v does not match ErrInvalidFilter", err)
			}
			return
		}
		if err := flt.Validate(); err != nil {
			t.Fatalf("parsed filter is invalid: %v", err)
		}
		b, err := flt.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		g, err := ParseFilter(b)
		if err != nil {
			t.Fatalf("re-parsing %s: %v", b, err)
		}
		b2, _ := g.MarshalJSON()
		if string(b) != string(b2) {
			t.Fatalf("not stable: %s vs %s", b, b2)
		}
		if flt.Match(&m) != g.Match(&m) {
			t.Fatalf("%s matches differently after a round trip", data)
		}
	})
}

// bigFilter is an object of n distinct metadata conditions, the last repeating the first when dup.
func bigFilter(n int, dup bool) []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		k := i
		if dup && i == n-1 {
			k = 0
		}
		fmt.Fprintf(&b, `"metadata.k%d":%d`, k, i)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// TestParseFilterKeyLimit: a filter holds at most MaxFilterKeys keys, and the parser reads no
// further than that (issue 23: a 100,000-key filter took 17.7 s of CPU through a quadratic
// duplicate-key scan); duplicates are still found anywhere, in time linear in the keys.
func TestParseFilterKeyLimit(t *testing.T) {
	if _, err := ParseFilter(bigFilter(MaxFilterKeys, false)); err != nil {
		t.Fatalf("%d keys: %v", MaxFilterKeys, err)
	}
	_, err := ParseFilter(bigFilter(MaxFilterKeys, true))
	if !errors.Is(err, ErrInvalidFilter) || !strings.Contains(err.Error(), `key "metadata.k0" appears twice`) {
		t.Fatalf("a duplicate at the end: %v", err)
	}
	// Keys count over all objects together, nested ones included.
	nested := `{"or": [` + strings.TrimSuffix(strings.Repeat(`{"session": "a"},`, MaxFilterKeys), ",") + `]}`
	for _, in := range [][]byte{bigFilter(MaxFilterKeys+1, false), bigFilter(100_000, false), []byte(nested)} {
		_, err := ParseFilter(in)
		if !errors.Is(err, ErrInvalidFilter) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d keys", MaxFilterKeys)) {
			t.Fatalf("%d bytes of filter: %v, want the key limit", len(in), err)
		}
	}
}
