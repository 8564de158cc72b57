package memory

import (
	"errors"
	"testing"

	"github.com/engramdb/engram/memory/lexical"
)

func TestRecordedEmbedder(t *testing.T) {
	dir := t.TempDir()
	var seen []*EmbedderSpec
	from := func(rec *EmbedderSpec) (Embedder, error) {
		seen = append(seen, rec)
		return lexical.New(lexical.Options{Dim: 32})
	}
	s, err := Open(dir, OpenOptions{EmbedderFrom: from})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.RecordedEmbedder(); ok || err != nil {
		t.Fatalf("a new store has a recorded embedder: %v %v", ok, err)
	}
	if err := s.RecordEmbedder("", "x"); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("empty kind: %v", err)
	}
	if err := s.RecordEmbedder("onnx", "/models/bge"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, OpenOptions{EmbedderFrom: from}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := EmbedderSpec{Kind: "onnx", Location: "/models/bge", Fingerprint: s.Embedder().Fingerprint(), Dim: 32}
	if len(seen) != 2 || seen[0] != nil || seen[1] == nil || *seen[1] != want || want.String() != "onnx:/models/bge" {
		t.Fatalf("EmbedderFrom saw %v, want nil then %+v", seen, want)
	}
}
