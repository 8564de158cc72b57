package importer_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/importer"
	"github.com/engramdb/engram/memory"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestID(t *testing.T) {
	a := importer.ID("chroma", "c1", "r1")
	if len(a) != 32 || a != importer.ID("chroma", "c1", "r1") {
		t.Fatalf("ID %q is not 32 stable hex digits", a)
	}
	// The parts are separated: moving a byte between them gives another ID.
	for _, other := range []string{importer.ID("chroma", "c1r", "1"), importer.ID("chroma", "c2", "r1"), importer.ID("mem0", "c1", "r1")} {
		if other == a {
			t.Fatalf("collision: %s", a)
		}
	}
}

func TestMapping(t *testing.T) {
	mp := importer.Mapping{Kind: "test", IDKey: "test_id", Now: now}
	md := map[string]any{
		"source": "notes", "tags": "a, b ,a,", "importance": 0.9, "created_at": "2024-01-02T03:04:05+02:00",
		"updated": "2024-02-02 00:00:00", "n": int64(3), "f": 1.5, "ok": true, "none": nil, "list": []any{1.0},
		"obj": map[string]any{}, "long": strings.Repeat("é", 3000), "bad\x01key": "x", "test_id": "spoof",
	}
	rep := importer.NewReport("test")
	m, ok := mp.Memory(importer.Record{SourceID: "r1", Text: "hello", Session: "s", Metadata: md}, rep)
	if !ok {
		t.Fatal(rep.Dropped)
	}
	if m.ID != importer.ID("test", "", "r1") || m.Source != "notes" || !slices.Equal(m.Tags, []string{"a", "b"}) || m.Importance != 0.9 {
		t.Errorf("fields: %+v", m)
	}
	if !m.Created.Equal(time.Date(2024, 1, 2, 1, 4, 5, 0, time.UTC)) || !m.Updated.Equal(time.Date(2024, 2, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("times: %v %v", m.Created, m.Updated)
	}
	want := map[string]any{"test_id": "r1", "n": 3.0, "f": 1.5, "ok": true}
	if fmt.Sprint(m.Metadata) != fmt.Sprint(want) {
		t.Errorf("metadata %v, want %v", m.Metadata, want)
	}
	wantUnmapped := map[string]string{"none": "null value", "list": "list value", "obj": "object value",
		"long": "string over 4 KiB", "bad\x01key": "key not 1..120 bytes of UTF-8 without control characters", "test_id": "key taken by the importer"}
	for k, why := range wantUnmapped {
		if rep.Unmapped[k][why] != 1 {
			t.Errorf("unmapped %q: %v, want %q", k, rep.Unmapped[k], why)
		}
	}
	if len(rep.Unmapped) != len(wantUnmapped) {
		t.Errorf("unmapped: %v", rep.Unmapped)
	}
	if err := memory.CheckMetadata(m.Metadata); err != nil {
		t.Fatal(err)
	}

	// A value that does not fit its field stays in the metadata under its name.
	m, _ = mp.Memory(importer.Record{SourceID: "r2", Text: "x", Metadata: map[string]any{"importance": 7.0, "source": 3.0, "tags": 1.0, "created": "soon"}}, rep)
	if m.Importance != memory.DefaultImportance || m.Source != "" || m.Tags != nil || len(m.Metadata) != 5 || !m.Created.Equal(now) || !m.Updated.Equal(now) {
		t.Errorf("misfits: %+v", m)
	}
	if rep.Defaulted["created: the import's time"] != 1 {
		t.Errorf("defaulted: %v", rep.Defaulted)
	}

	// Past the limits: the first keys in sorted order are kept, the rest counted.
	many := map[string]any{}
	for i := range 40 {
		many[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", 1000)
	}
	rep = importer.NewReport("test")
	m, _ = mp.Memory(importer.Record{SourceID: "r3", Text: "x", Metadata: many}, rep)
	if err := memory.CheckMetadata(m.Metadata); err != nil {
		t.Fatalf("kept metadata is not valid: %v", err)
	}
	if len(m.Metadata)+rep.UnmappedTotal() != 41 || rep.Unmapped["k39"]["over 16 KiB of metadata"] != 1 {
		t.Errorf("%d kept, unmapped %v", len(m.Metadata), rep.Unmapped)
	}

	// Records that cannot be memories.
	rep = importer.NewReport("test")
	for _, r := range []importer.Record{{Text: " \n"}, {Text: "a\x1eb"}, {Text: "\xff"}, {Text: "x", Session: strings.Repeat("s", 300)},
		{Text: strings.Repeat("x", memory.DefaultMaxTextBytes+1)}} {
		if _, ok := mp.Memory(r, rep); ok {
			t.Errorf("%.20q: mapped", r.Text)
		}
	}
	if rep.Records != 5 || rep.Memories != 0 || len(rep.Dropped) != 5 {
		t.Errorf("dropped: %+v", rep)
	}

	// Updated before Created, a time the engine cannot hold.
	rep = importer.NewReport("test")
	m, _ = mp.Memory(importer.Record{SourceID: "r4", Text: "x", Created: now, Updated: now.Add(-time.Hour)}, rep)
	if !m.Updated.Equal(m.Created) {
		t.Errorf("updated %v before created %v", m.Updated, m.Created)
	}
	m, _ = mp.Memory(importer.Record{SourceID: "r5", Text: "x", Created: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)}, rep)
	if !m.Created.Equal(now) {
		t.Errorf("created %v", m.Created)
	}
}

func TestParseTime(t *testing.T) {
	want := time.Date(2024, 7, 20, 21, 23, 45, 123456000, time.UTC)
	for _, s := range []string{"2024-07-20T14:23:45.123456-07:00", "2024-07-20T21:23:45.123456Z", "2024-07-20 21:23:45.123456",
		"2024-07-20T21:23:45.123456", " 2024-07-20 14:23:45.123456-07:00"} {
		if got, err := importer.ParseTime(s); err != nil || !got.Equal(want) {
			t.Errorf("%q: %v %v", s, got, err)
		}
	}
	for _, s := range []string{"", "yesterday", "2024-13-01", "1721510625"} {
		if _, err := importer.ParseTime(s); err == nil {
			t.Errorf("%q parsed", s)
		}
	}
}

func TestUseVectors(t *testing.T) {
	onnx := importer.Model{Fingerprint: "onnx/sha256:abc/dim=384", Dim: 384, Spec: "onnx:/models/all-MiniLM-L6-v2"}
	ollama := importer.Model{Fingerprint: "ollama:nomic-embed-text:dim=768", Dim: 768}
	for _, tc := range []struct {
		m      importer.Model
		p      importer.VectorPolicy
		model  string
		dim    int
		use    bool
		reason string
	}{
		{onnx, importer.VectorsAuto, "all-MiniLM-L6-v2", 384, true, ""},
		{onnx, importer.VectorsAuto, "sentence-transformers/all-MiniLM-L6-v2", 384, false, "is not the store's"},
		{onnx, importer.VectorsAuto, "", 384, false, "does not name"},
		{onnx, importer.VectorsKeep, "", 384, true, ""},
		{onnx, importer.VectorsKeep, "", 768, false, "768 dimensions"},
		{onnx, importer.VectorsReembed, "all-MiniLM-L6-v2", 384, false, "reembed"},
		{onnx, importer.VectorsKeep, "", 0, false, "no vectors"},
		{ollama, importer.VectorsAuto, "nomic-embed-text", 768, true, ""},
		{ollama, importer.VectorsAuto, "text-embedding-3-small", 768, false, "is not the store's"},
	} {
		use, why := tc.m.UseVectors(tc.p, tc.model, tc.dim)
		if use != tc.use || !strings.Contains(why, tc.reason) {
			t.Errorf("%+v: %v %q", tc, use, why)
		}
	}
	for _, s := range []string{"auto", "keep", "reembed", ""} {
		p, err := importer.ParseVectorPolicy(s)
		if err != nil || (s != "" && p.String() != s) {
			t.Errorf("%q: %v %v", s, p, err)
		}
	}
	if _, err := importer.ParseVectorPolicy("always"); err == nil {
		t.Error("always accepted")
	}
}

func TestSummary(t *testing.T) {
	rep := importer.NewReport("chroma /x")
	mp := importer.Mapping{Kind: "chroma", IDKey: "chroma_id", Now: now}
	mp.Memory(importer.Record{SourceID: "1", Text: "t", Metadata: map[string]any{"a": "b", "n": nil}}, rep)
	var b strings.Builder
	if err := rep.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"read 1 records from chroma /x: 1 memories", "a    metadata", "unmapped (left out): 1 values", "n    null value  1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
