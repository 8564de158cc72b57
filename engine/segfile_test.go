package engine

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/engramdb/engram/internal/vfs"
)

func testSections() []section {
	mk := func(k sectionKind, b []byte) section {
		return section{kind: k, write: func(w io.Writer) error { _, err := w.Write(b); return err }}
	}
	return []section{
		mk(secInfo, []byte("info")),
		mk(secGraph, bytes.Repeat([]byte{7}, 1000)),
		mk(secIDs, nil),
	}
}

func TestSegFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	size, err := writeSegmentFile(vfs.OS, dir, "a.seg", testSections())
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir + "/a.seg")
	if err != nil || st.Size() != size || st.Mode().Perm() != 0o600 {
		t.Fatalf("stat %v size %d want %d", st, size, st.Size())
	}
	sf, err := openSegFile(dir + "/a.seg")
	if err != nil {
		t.Fatal(err)
	}
	defer sf.close()
	if err := sf.verify(); err != nil {
		t.Fatal(err)
	}
	if string(sf.sections[secInfo]) != "info" || len(sf.sections[secGraph]) != 1000 || len(sf.sections[secIDs]) != 0 {
		t.Fatalf("sections %v", sf.sections)
	}
	for _, e := range sf.entries {
		if e.off%segAlign != 0 {
			t.Fatalf("section %d at unaligned offset %d", e.kind, e.off)
		}
	}
}

// TestReadCheckedChunks: a pread of section bytes checks the chunks it
// covers once; a read of chunks all checked before is served as it is, but
// one that also covers an unchecked chunk still checks that one, and
// damage there is refused.
func TestReadCheckedChunks(t *testing.T) {
	leaveDamaged(t)
	_, _, path, g := graphStore(t)
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sf, err := openSegFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.close()
	if sf.chunks == nil || sf.file == nil {
		t.Fatal("a current segment file without chunks or pread")
	}
	const chunk = 1 << segChunkShift
	if g.len < 8*chunk {
		t.Fatalf("graph section of %d bytes, want 8 chunks at least", g.len)
	}
	read := func(off, n uint64) ([]byte, error) {
		dst := make([]byte, n)
		return dst, sf.readChecked(g.off+off, dst)
	}
	// Check the section's first three chunks.
	if got, err := read(100, 2*chunk); err != nil || !bytes.Equal(got, file[g.off+100:g.off+100+2*chunk]) {
		t.Fatalf("first read: %v", err)
	}
	// Damage a byte of an unchecked chunk: a read within the checked
	// chunks is answered, one that reaches the damaged chunk is refused.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	bad := g.off + 5*chunk + 10
	if _, err := f.WriteAt([]byte{^file[bad]}, int64(bad)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got, err := read(chunk+5, 100); err != nil || !bytes.Equal(got, file[g.off+chunk+5:g.off+chunk+105]) {
		t.Fatalf("a read of checked chunks: %v", err)
	}
	var ce *CorruptionError
	if _, err := read(chunk+5, 5*chunk); !errors.As(err, &ce) {
		t.Fatalf("a read reaching a damaged unchecked chunk = %v, want a CorruptionError", err)
	}
}

func TestSegFileCorruption(t *testing.T) {
	var buf bytes.Buffer
	if _, err := streamSegment(&buf, testSections()); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	// Every single-byte flip is caught: by the header, trailer and table
	// checks at parse, or at verify by a section checksum or the zero
	// padding check.
	caught := 0
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		secs, entries, err := parseSegment(b)
		if err != nil {
			caught++
			continue
		}
		sf := &segFile{path: "x", data: b, sections: secs, entries: entries}
		if err := sf.verify(); err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.File != "x" {
				t.Fatalf("verify error %v is not a CorruptionError naming the file", err)
			}
			caught++
		}
	}
	if caught != len(good) {
		t.Fatalf("only %d of %d flips caught", caught, len(good))
	}
	if _, _, err := parseSegment(good[:len(good)-1]); err == nil {
		t.Fatal("truncated file parsed")
	}
}

func FuzzParseSegment(f *testing.F) {
	var buf bytes.Buffer
	if _, err := streamSegment(&buf, testSections()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(segMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		secs, entries, err := parseSegment(b)
		if err != nil {
			return
		}
		sf := &segFile{path: "fuzz", data: b, sections: secs, entries: entries}
		_ = sf.verify()
	})
}
