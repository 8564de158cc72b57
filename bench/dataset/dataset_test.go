package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
)

func TestFvecsRoundTrip(t *testing.T) {
	v := &Vectors{Dim: 3, Data: []float32{1, 2, 3, -4, 5.5, 0}}
	var buf bytes.Buffer
	if err := WriteFvecs(&buf, v); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 2*(4+12) {
		t.Fatalf("encoded %d bytes", buf.Len())
	}
	got, err := ReadFvecs(bytes.NewReader(buf.Bytes()), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Dim != 3 || !slices.Equal(got.Data, v.Data) {
		t.Fatalf("got %+v", got)
	}
	one, err := ReadFvecs(bytes.NewReader(buf.Bytes()), 1)
	if err != nil || one.Len() != 1 || !slices.Equal(one.Row(0), v.Row(0)) {
		t.Fatalf("maxRows=1: %+v %v", one, err)
	}
}

func TestIvecsRoundTrip(t *testing.T) {
	rows := [][]int32{{1, 2}, {-3, 1 << 30}}
	var buf bytes.Buffer
	if err := WriteIvecs(&buf, rows); err != nil {
		t.Fatal(err)
	}
	got, err := ReadIvecs(&buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !slices.Equal(got[0], rows[0]) || !slices.Equal(got[1], rows[1]) {
		t.Fatalf("got %v", got)
	}
}

func row(dim int32, vals ...uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(dim))
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func TestReadErrors(t *testing.T) {
	cases := map[string][]byte{
		"zero dim":       row(0),
		"negative dim":   row(-1, 1),
		"huge dim":       row(MaxDim+1, 1),
		"truncated row":  row(2, 1),
		"torn header":    {1, 0},
		"dim changes":    append(row(1, 1), row(2, 1, 2)...),
		"header no data": row(3),
	}
	for name, b := range cases {
		if _, err := ReadFvecs(bytes.NewReader(b), 0); err == nil {
			t.Errorf("fvecs %s: no error", name)
		}
		if _, err := ReadIvecs(bytes.NewReader(b), 0); err == nil {
			t.Errorf("ivecs %s: no error", name)
		}
	}
	if v, err := ReadFvecs(bytes.NewReader(nil), 0); err != nil || v.Len() != 0 {
		t.Errorf("empty input: %v %v", v, err)
	}
}

func TestLoadGzipAndWriteFile(t *testing.T) {
	dir := t.TempDir()
	v := &Vectors{Dim: 2, Data: []float32{1, 2, 3, 4}}
	plain := filepath.Join(dir, "v.fvecs")
	if err := WriteFile(plain, func(w io.Writer) error { return WriteFvecs(w, v) }); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(plain)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("stat %v, err %v", st.Mode(), err)
	}
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	if err := WriteFvecs(zw, v); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	gz := filepath.Join(dir, "v.fvecs.gz")
	if err := os.WriteFile(gz, zbuf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{plain, gz} {
		got, err := LoadFvecs(p, 0)
		if err != nil || !slices.Equal(got.Data, v.Data) {
			t.Fatalf("%s: %v %v", p, got, err)
		}
	}
	bad := filepath.Join(dir, "bad.fvecs.gz")
	os.WriteFile(bad, []byte("not gzip"), 0o600)
	if _, err := LoadFvecs(bad, 0); err == nil {
		t.Error("bad gzip: no error")
	}
	if _, err := LoadFvecs(filepath.Join(dir, "missing.fvecs"), 0); err == nil {
		t.Error("missing file: no error")
	}
}

func TestGroundTruthMatchesNaive(t *testing.T) {
	s, err := Synthetic(SyntheticConfig{N: 500, Queries: 20, Dim: 48, Latent: 6, Clusters: 5, K: 10})
	if err != nil {
		t.Fatal(err)
	}
	for q := 0; q < s.Queries.Len(); q++ {
		ids := make([]int32, s.Base.Len())
		for i := range ids {
			ids[i] = int32(i)
		}
		qv := s.Queries.Row(q)
		slices.SortStableFunc(ids, func(a, b int32) int {
			da := quant.FloatDistance(quant.Cosine, qv, s.Base.Row(int(a)))
			db := quant.FloatDistance(quant.Cosine, qv, s.Base.Row(int(b)))
			switch {
			case da < db:
				return -1
			case da > db:
				return 1
			}
			return 0
		})
		if !slices.Equal(s.GroundTruth[q], ids[:10]) {
			t.Fatalf("query %d: got %v want %v", q, s.GroundTruth[q], ids[:10])
		}
	}
}

func TestSyntheticDeterministicAndNormalized(t *testing.T) {
	cfg := SyntheticConfig{N: 200, Queries: 5, Dim: 64, K: 5}
	a, err := Synthetic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Synthetic(cfg)
	if !slices.Equal(a.Base.Data, b.Base.Data) || !slices.Equal(a.Queries.Data, b.Queries.Data) {
		t.Fatal("same config gave different data")
	}
	for i := 0; i < a.Base.Len(); i++ {
		if n := quant.DotFloat32(a.Base.Row(i), a.Base.Row(i)); n < 0.999 || n > 1.001 {
			t.Fatalf("row %d has squared norm %v", i, n)
		}
	}
	cfg.Seed = 2
	c, _ := Synthetic(cfg)
	if slices.Equal(a.Base.Data, c.Base.Data) {
		t.Fatal("different seeds gave the same data")
	}
	if _, err := Synthetic(SyntheticConfig{}); err == nil {
		t.Fatal("N=0: no error")
	}
}

func TestRecallAtK(t *testing.T) {
	if r := RecallAtK([]uint32{1, 2, 3}, []int32{3, 9, 1, 7}, 3); r != 2.0/3 {
		t.Fatalf("recall %v", r)
	}
	if r := RecallAtK(nil, []int32{1}, 0); r != 0 {
		t.Fatalf("k=0: %v", r)
	}
}

// TestSharedSets loads every catalogued set and checks the ground truth
// against brute force on a few queries (ties aside, the first neighbour
// must match).
func TestSharedSets(t *testing.T) {
	root, err := FindRoot(".")
	if errors.Is(err, ErrNoDatasets) {
		t.Skip("shared/datasets not found above the test directory")
	}
	for _, name := range Names() {
		if testing.Short() && name == "glove100-100k" {
			continue
		}
		s, err := Load(root, name)
		if err != nil {
			t.Fatal(err)
		}
		few := s.Queries.Head(5)
		gt := GroundTruth(s.Base, few, s.Metric, 10, 0)
		for q := range gt {
			if RecallAtK(toU32(gt[q]), s.GroundTruth[q], 10) < 0.9 {
				t.Errorf("%s query %d: brute force %v, file %v", name, q, gt[q], s.GroundTruth[q][:10])
			}
		}
	}
	if _, err := Load(root, "nope"); err == nil {
		t.Error("unknown set: no error")
	}
}

func toU32(ids []int32) []uint32 {
	out := make([]uint32, len(ids))
	for i, x := range ids {
		out[i] = uint32(x)
	}
	return out
}

func FuzzReadFvecs(f *testing.F) {
	f.Add(row(2, 1, 2))
	f.Add(append(row(1, 7), row(1, 8)...))
	f.Add(row(-5))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ReadFvecs(bytes.NewReader(b), 0)
		if err != nil {
			return
		}
		if v.Len() > 0 && (v.Dim <= 0 || len(v.Data)%v.Dim != 0) {
			t.Fatalf("inconsistent result %d %d", v.Dim, len(v.Data))
		}
		var out bytes.Buffer
		if err := WriteFvecs(&out, v); err != nil || !bytes.Equal(out.Bytes(), b) {
			t.Fatalf("re-encoding differs")
		}
	})
}

func FuzzReadIvecs(f *testing.F) {
	f.Add(row(2, 1, 2))
	f.Add(append(row(1, 7), row(2, 8, 9)...))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, err := ReadIvecs(bytes.NewReader(b), 0)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WriteIvecs(&out, rows); err != nil || !bytes.Equal(out.Bytes(), b) {
			t.Fatalf("re-encoding differs")
		}
	})
}
