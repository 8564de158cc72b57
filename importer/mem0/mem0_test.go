package mem0_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/importer"
	"github.com/engramdb/engram/importer/mem0"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/memorytest"
)

var ctx = context.Background()

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newStore(t *testing.T) *memory.Store {
	t.Helper()
	s, err := memory.New(ctx, memory.NewMemBackend(), memory.Options{Embedder: memorytest.NewHashEmbedder(32, "hash-32")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// items decodes a fixture independently of the package: the list, or the list under results.
func items(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var list []map[string]any
	if err := json.Unmarshal(b, &list); err == nil {
		return list
	}
	var top struct{ Results []map[string]any }
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	return top.Results
}

// TestFixtures reads both shapes and checks every memory, key by key, against an
// independent decoding of the file: each value is on a field, in the metadata, or counted as
// unmapped.
func TestFixtures(t *testing.T) {
	for _, tc := range []struct {
		file                    string
		records, memories       int
		unmapped                map[string]map[string]int
		sessions                map[string]string // mem0 id -> session
		tags                    map[string][]string
		source                  map[string]string
		importance              map[string]float64
		relations, defaultedUpd int
	}{
		{
			file: "get_all_results.json", records: 5, memories: 4,
			unmapped: map[string]map[string]int{"hash": {"mem0's MD5 of the text, not kept": 4}, "nested": {"object value": 1},
				"relations": {"graph memory relations are not imported": 2}, "score": {"a search score, not kept": 1}},
			sessions: map[string]string{"892db2ae-06d9-49e5-8b3e-585ef9b85b8e": "alice", "aef0c4f6-4b07-41f1-9a0f-3e1f5d0b7c11": "alice",
				"c3a1e5f2-8d7b-4f6e-9a2b-1c0d3e4f5a6b": "scheduler", "d4b2f6a3-9e8c-4a7f-8b3c-2d1e4f5a6b7c": "conv-7"},
			tags:       map[string][]string{"c3a1e5f2-8d7b-4f6e-9a2b-1c0d3e4f5a6b": {"calendar", "team"}},
			source:     map[string]string{"c3a1e5f2-8d7b-4f6e-9a2b-1c0d3e4f5a6b": "onboarding", "d4b2f6a3-9e8c-4a7f-8b3c-2d1e4f5a6b7c": "chat"},
			importance: map[string]float64{"c3a1e5f2-8d7b-4f6e-9a2b-1c0d3e4f5a6b": 0.7},
			relations:  2, defaultedUpd: 2,
		},
		{
			file: "get_all_list.json", records: 3, memories: 3,
			unmapped: map[string]map[string]int{"hash": {"mem0's MD5 of the text, not kept": 3}, "expiration_date": {"null value": 1},
				"structured_attributes": {"object value": 1}, "categories": {"the metadata gives the tags": 1}},
			sessions: map[string]string{"1f0e2d3c-4b5a-4697-8877-665544332211": "carol", "2a1b0c9d-8e7f-4a6b-9c5d-4e3f2a1b0c9d": "carol",
				"3b2c1d0e-9f8a-4b7c-8d6e-5f4a3b2c1d0e": "assistant-es"},
			tags: map[string][]string{"1f0e2d3c-4b5a-4697-8877-665544332211": {"hobbies", "travel"},
				"2a1b0c9d-8e7f-4a6b-9c5d-4e3f2a1b0c9d": {"professional_details"}, "3b2c1d0e-9f8a-4b7c-8d6e-5f4a3b2c1d0e": {"reminders", "language"}},
			defaultedUpd: 1,
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			ms, rep, err := mem0.Read(bytes.NewReader(b), tc.file, mem0.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Records != tc.records || rep.Memories != tc.memories || len(ms) != tc.memories {
				t.Fatalf("report %+v, %d memories", rep, len(ms))
			}
			if rep.Vectors.Embedded != tc.memories || rep.Defaulted["updated: the created time"] != tc.defaultedUpd {
				t.Errorf("vectors %+v, defaulted %v", rep.Vectors, rep.Defaulted)
			}
			for k, want := range tc.unmapped {
				for why, n := range want {
					if rep.Unmapped[k][why] != n {
						t.Errorf("unmapped %s %q: %d, want %d (%v)", k, why, rep.Unmapped[k][why], n, rep.Unmapped)
					}
				}
			}
			if len(rep.Unmapped) != len(tc.unmapped) {
				t.Errorf("unmapped keys: %v, want %v", rep.Unmapped, tc.unmapped)
			}
			s := newStore(t)
			if err := importer.Write(ctx, importer.StoreTarget{Store: s}, ms, importer.WriteOptions{}, rep); err != nil {
				t.Fatal(err)
			}
			for _, it := range items(t, b) {
				id := it["id"].(string)
				got, err := s.Get(ctx, importer.ID("mem0", "", id))
				if err != nil {
					t.Fatal(err)
				}
				if it["memory"] == "" {
					if len(got) != 0 {
						t.Errorf("%s: an empty memory was imported", id)
					}
					continue
				}
				if len(got) != 1 {
					t.Fatalf("%s: not imported", id)
				}
				m := got[0]
				if m.Text != it["memory"] || m.Session != tc.sessions[id] || m.Metadata["mem0_id"] != id {
					t.Errorf("%s: text %q session %q mem0_id %v", id, m.Text, m.Session, m.Metadata["mem0_id"])
				}
				if !slices.Equal(m.Tags, tc.tags[id]) || m.Source != tc.source[id] {
					t.Errorf("%s: tags %v source %q", id, m.Tags, m.Source)
				}
				if w, ok := tc.importance[id]; ok && m.Importance != w || !ok && m.Importance != memory.DefaultImportance {
					t.Errorf("%s: importance %v", id, m.Importance)
				}
				created, _ := time.Parse(time.RFC3339Nano, it["created_at"].(string))
				if !m.Created.Equal(created) {
					t.Errorf("%s: created %v, want %v", id, m.Created, created)
				}
				if u, ok := it["updated_at"].(string); ok {
					updated, _ := time.Parse(time.RFC3339Nano, u)
					if !m.Updated.Equal(updated) {
						t.Errorf("%s: updated %v, want %v", id, m.Updated, updated)
					}
				} else if !m.Updated.Equal(created) {
					t.Errorf("%s: updated %v without updated_at, want the created time", id, m.Updated)
				}
				// Every other value is in the metadata under its key, or on a field, or unmapped.
				values := map[string]any{}
				for k, v := range it {
					values[k] = v
				}
				md, _ := it["metadata"].(map[string]any)
				delete(values, "metadata")
				for k, v := range md {
					values[k] = v
				}
				for k, v := range values {
					switch {
					case k == "id" || k == "memory" || k == "created_at" || k == "updated_at":
					case k == "source" || k == "importance" || k == "tags" || k == "categories":
					case k == "user_id" || k == "agent_id" || k == "run_id":
						if v != m.Session && m.Metadata[k] != v {
							t.Errorf("%s: %s = %v is neither the session nor metadata", id, k, v)
						}
					case rep.Unmapped[k] != nil:
					default:
						if m.Metadata[k] != v {
							t.Errorf("%s: metadata %s = %#v, source %#v", id, k, m.Metadata[k], v)
						}
					}
				}
			}
		})
	}
}

// TestMalformed: input that is not a get_all dump is an error naming what is wrong, and
// Read returns no memory (so nothing is written).
func TestMalformed(t *testing.T) {
	for name, in := range map[string]string{
		"empty":            "",
		"not json":         "hello",
		"truncated":        `[{"id": "a", "memory": "x"}`,
		"trailing":         `[] []`,
		"number":           `42`,
		"object no result": `{"memories": []}`,
		"results object":   `{"results": {"id": "a"}}`,
		"item not object":  `[{"id": "a", "memory": "x"}, 7]`,
		"no id":            `[{"memory": "x"}]`,
		"empty id":         `[{"id": "", "memory": "x"}]`,
		"id number":        `[{"id": 5, "memory": "x"}]`,
		"no memory":        `[{"id": "a"}]`,
		"memory not text":  `[{"id": "a", "memory": ["x"]}]`,
		"twice":            `[{"id": "a", "memory": "x"}, {"id": "a", "memory": "y"}]`,
		"bad time":         `[{"id": "a", "memory": "x", "created_at": "yesterday"}]`,
		"metadata list":    `[{"id": "a", "memory": "x", "metadata": [1]}]`,
		"user_id number":   `[{"id": "a", "memory": "x", "user_id": 7}]`,
		"relations object": `{"results": [], "relations": {}}`,
	} {
		ms, _, err := mem0.Read(strings.NewReader(in), name, mem0.Options{})
		if !errors.Is(err, memory.ErrInvalidInput) || ms != nil {
			t.Errorf("%s: %v, %d memories", name, err, len(ms))
		}
	}
	// Both empty shapes are valid and import nothing.
	for _, in := range []string{`[]`, `{"results": []}`, " \n[]\n"} {
		ms, rep, err := mem0.Read(strings.NewReader(in), "empty", mem0.Options{})
		if err != nil || len(ms) != 0 || rep.Records != 0 {
			t.Errorf("%q: %v %d", in, err, len(ms))
		}
	}
}

// TestSession is the mapping of mem0's scopes onto engram's session, and --session's override.
func TestSession(t *testing.T) {
	for _, tc := range []struct{ user, agent, run, session, from string }{
		{"u", "a", "r", "u", "user_id"}, {"", "a", "r", "a", "agent_id"}, {"", "", "r", "r", "run_id"}, {"", "", "", "", ""},
	} {
		if s, from := mem0.Session(tc.user, tc.agent, tc.run); s != tc.session || from != tc.from {
			t.Errorf("%+v: %q from %q", tc, s, from)
		}
	}
	one := "everyone"
	ms, rep, err := mem0.Read(strings.NewReader(`[{"id": "a", "memory": "x", "user_id": "u", "run_id": "r"}]`), "x", mem0.Options{Session: &one})
	if err != nil || len(ms) != 1 || ms[0].Session != "everyone" || ms[0].Metadata["user_id"] != "u" || ms[0].Metadata["run_id"] != "r" {
		t.Fatalf("%v %+v %+v", err, ms, rep)
	}
}

// TestResume cancels an import part way; the second run writes each missing memory once,
// a third writes nothing.
func TestResume(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"results": [`)
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"id": "m` + string(rune('A'+i%26)) + string(rune('a'+i/26)) + `", "memory": "memory number ` +
			strings.Repeat("x", i) + `", "user_id": "u", "created_at": "2025-01-01T00:00:00Z"}`)
	}
	b.WriteString(`]}`)
	ms, rep, err := mem0.Read(strings.NewReader(b.String()), "x", mem0.Options{})
	if err != nil || len(ms) != 40 {
		t.Fatal(err, len(ms))
	}
	s := newStore(t)
	cctx, cancel := context.WithCancel(ctx)
	tgt := &cancelling{Target: importer.StoreTarget{Store: s}, after: 2, cancel: cancel}
	err = importer.Write(cctx, tgt, ms, importer.WriteOptions{Batch: 6}, rep)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted write: %v", err)
	}
	n, _ := s.Count(ctx, nil)
	if n != 12 || rep.Written != 12 {
		t.Fatalf("after the interruption: %d in the store, %d written", n, rep.Written)
	}
	rep2 := importer.NewReport("again")
	if err := importer.Write(ctx, importer.StoreTarget{Store: s}, ms, importer.WriteOptions{Batch: 6}, rep2); err != nil {
		t.Fatal(err)
	}
	if rep2.Written != 28 || rep2.Existing != 12 {
		t.Fatalf("rerun: %+v", rep2)
	}
	rep3 := importer.NewReport("third")
	if err := importer.Write(ctx, importer.StoreTarget{Store: s}, ms, importer.WriteOptions{Batch: 6}, rep3); err != nil || rep3.Written != 0 || rep3.Existing != 40 {
		t.Fatalf("third run: %v %+v", err, rep3)
	}
	seen := map[string]int{}
	if err := s.Scan(ctx, nil, func(m memory.Memory) error { seen[m.Metadata["mem0_id"].(string)]++; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 40 {
		t.Fatalf("%d distinct records in the store", len(seen))
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("%s: %d copies", id, c)
		}
	}
}

// cancelling cancels the context inside its after+1-th Import, before writing.
type cancelling struct {
	importer.Target
	after, calls int
	cancel       func()
}

func (c *cancelling) Import(ctx context.Context, ms []memory.Memory) error {
	c.calls++
	if c.calls > c.after {
		c.cancel()
	}
	return c.Target.Import(ctx, ms)
}

// FuzzDecode feeds arbitrary bytes to the decoder: an error, or items with IDs and texts,
// never a panic.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"get_all_results.json", "get_all_list.json"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`[{"id": "a", "memory": "x", "metadata": {"k": [1, {"x": null}]}}]`))
	f.Add([]byte(`{"results": [], "relations": []}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := mem0.Decode(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, it := range d.Items {
			if it.ID == "" {
				t.Fatal("an item without an ID")
			}
		}
		if _, _, err := mem0.Read(bytes.NewReader(b), "fuzz", mem0.Options{Now: now}); err != nil {
			t.Fatalf("Decode accepted what Read refuses: %v", err)
		}
	})
}
