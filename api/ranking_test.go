package api

import (
	"testing"

	"github.com/engramdb/engram/memory"
)

// TestRecallDefaultsMatchLibrary: a request that sets nothing ranks like memory.RecallOptions{}
// (one ranking in every door).
func TestRecallDefaultsMatchLibrary(t *testing.T) {
	o, err := (&RecallRequest{Session: "s"}).Options()
	if err != nil {
		t.Fatal(err)
	}
	var lib memory.RecallOptions
	if o.Mode != lib.Mode || o.Fusion != lib.Fusion || o.Decay != lib.Decay || o.VectorWeight != 0 || o.KeywordWeight != 0 {
		t.Fatalf("request defaults %+v differ from the library's %+v", o, lib)
	}
	if o, err := (&RecallRequest{Fusion: "rrf"}).Options(); err != nil || o.Fusion != memory.FusionRRF {
		t.Fatalf("fusion rrf: %+v %v", o, err)
	}
	if _, err := (&RecallRequest{Fusion: "max"}).Options(); err == nil {
		t.Fatal("unknown fusion accepted")
	}
}
