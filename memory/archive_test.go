package memory

import (
	"testing"
	"time"
)

func FuzzDecodeArchive(f *testing.F) {
	good, err := encodeArchive(archiveHeader{Fingerprint: "fp", Dim: 2}, []Memory{
		{ID: "a", Session: "s", Text: "hello", Vector: []float32{1, 0}, Created: time.Unix(5, 0)},
		{ID: "b", Session: "s", Text: "世界", Tags: []string{"x"}, Vector: []float32{0, 1}},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add([]byte("not zstd"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ms, err := decodeArchive(b)
		if err != nil {
			return
		}
		// What decodes re-encodes and decodes to the same memories.
		b2, err := encodeArchive(h, ms)
		if err != nil {
			t.Fatal(err)
		}
		_, ms2, err := decodeArchive(b2)
		if err != nil || len(ms2) != len(ms) {
			t.Fatalf("re-decode: %v %d != %d", err, len(ms2), len(ms))
		}
	})
}
