package memory

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory/lexical"
)

func TestExportRoundTripAndVersion1(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	emb, err := lexical.New(lexical.Options{Dim: 32})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(ctx, NewMemBackend(), Options{Embedder: emb, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(ctx, "u", "apples are red", RememberOptions{Tags: []string{"fruit"}, Metadata: map[string]any{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(ctx, "v", "boats float", RememberOptions{}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := s.Export(ctx, &buf, ExportOptions{Filter: Eq(FieldSession, "u"), Vectors: true})
	if err != nil || n != 1 {
		t.Fatalf("Export: %d %v", n, err)
	}
	h, ms, err := ReadExport(&buf)
	if err != nil || h.Version != ExportVersion || h.Dim != 32 || !h.Vectors || len(ms) != 1 {
		t.Fatalf("ReadExport: %+v %d %v", h, len(ms), err)
	}
	if ms[0].Text != "apples are red" || ms[0].Metadata["n"] != 1.0 || len(ms[0].Vector) != 32 || ms[0].LastAccess.IsZero() != true {
		t.Fatalf("read back %+v", ms[0])
	}
	// A first-release export: no header, the old keys, importance and last_access optional.
	v1 := `{"id":"a1","session":"u","text":"old memory","importance":0.7,"created":"2026-01-01T00:00:00Z","updated":"2026-01-02T00:00:00Z"}
{"id":"a2","session":"u","text":"older memory","tags":["x"],"created":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:00Z","last_access":"2026-02-01T00:00:00Z","access_count":3,"vector":[0.5,0.5]}
`
	h, ms, err = ReadExport(strings.NewReader(v1))
	if err != nil || h.Version != 1 || len(ms) != 2 || ms[1].Importance != DefaultImportance || ms[1].AccessCount != 3 || ms[1].LastAccess.IsZero() {
		t.Fatalf("version 1: %+v %+v %v", h, ms, err)
	}
	if err := s.Import(ctx, ms); err != nil {
		t.Fatalf("importing a version 1 file: %v", err)
	}
	for _, bad := range []string{
		`{"format":"engram-export","version":3}`,
		`{"format":"other","version":1}`,
		`{"id":"a","session":"u","text":"x","colour":"red","created":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:00Z"}`,
		`{"id":"","session":"u","text":"x"}`,
		`{"id":"a","session":"u","text":"x"}` + "\n" + `{"id":"a","session":"u","text":"y"}`,
		`{"id":"a","session":"u","text":"x","vector":"***"}`,
		`not json`,
	} {
		if _, _, err := ReadExport(strings.NewReader(bad)); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("ReadExport(%q): %v", bad, err)
		}
	}
}

func FuzzReadExport(f *testing.F) {
	f.Add([]byte(`{"format":"engram-export","version":2,"exported":"2026-01-01T00:00:00Z","fingerprint":"f","dim":2,"vectors":true}
{"id":"a","session":"u","text":"x","importance":0.5,"metadata":{"k":1},"created":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:00Z","last_access":null,"access_count":0,"vector":[1,0]}`))
	f.Add([]byte(`{"id":"a","session":"u","text":"x","vector":"AACAPwAAAAA="}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, ms, err := ReadExport(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("error %v does not match ErrInvalidInput", err)
			}
			return
		}
		for _, m := range ms {
			if m.ID == "" || m.Text == "" {
				t.Fatalf("accepted %+v", m)
			}
		}
	})
}
