package chroma_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/importer/chroma"
)

// FuzzHNSW feeds arbitrary header.bin, length.bin and element bytes to the hnswlib readers:
// they return an error or values within the header's bounds, and never panic.
func FuzzHNSW(f *testing.F) {
	files := hnswFiles(4, true, 3, []element{{label: 7, vec: []float32{1, 2, 3, 4}}, {label: 9, vec: []float32{0, 1, 0, 0}, deleted: true}})
	f.Add(files["header.bin"], files["length.bin"], files["data_level0.bin"])
	if dir := findFixture(); dir != "" {
		if b, err := os.ReadFile(filepath.Join(dir, "bb4b3481-fda3-4ffb-8612-0b549b55ba2b", "header.bin")); err == nil {
			f.Add(b, []byte{}, []byte{})
		}
	}
	f.Add(make([]byte, chroma.HNSWHeaderSize), []byte{1, 2, 3}, []byte{})
	f.Fuzz(func(t *testing.T, header, lengths, data []byte) {
		h, err := chroma.ParseHNSWHeader(header)
		if err != nil {
			return
		}
		if h.Dim() <= 0 || uint64(h.Dim())*4+h.OffsetData > h.SizePerElement {
			t.Fatalf("header accepted with dimension %d in %d-byte elements", h.Dim(), h.SizePerElement)
		}
		if ls, err := chroma.ParseLengths(lengths, h.ElementCount); err == nil && uint64(len(ls)) != h.ElementCount {
			t.Fatalf("%d lengths for %d elements", len(ls), h.ElementCount)
		}
		if uint64(len(data)) >= h.SizePerElement {
			e, err := chroma.ParseHNSWElement(h, data[:h.SizePerElement])
			if err != nil || len(e.Vector) != h.Dim() {
				t.Fatalf("element: %v, %d values for dimension %d", err, len(e.Vector), h.Dim())
			}
		}
	})
}

// FuzzIDMap feeds arbitrary bytes to the pickle reader: an error or a map, never a panic.
func FuzzIDMap(f *testing.F) {
	for _, name := range []string{"persistent_data.pickle", "idmap_rust.pickle"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("\x80\x04}\x94(\x8c\x0blabel_to_id\x94}\x94K\x01\x8c\x01a\x94su."))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := chroma.ReadIDMap(b)
		if err == nil && m.LabelToID == nil {
			t.Fatal("no error and no map")
		}
	})
}
