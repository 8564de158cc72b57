package hnsw

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/quant"
)

// datasetDir finds shared/datasets by walking up from the working
// directory, or skips the test.
func datasetDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "datasets")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("shared/datasets not found above the working directory")
		}
		dir = parent
	}
}

// readVecs reads an fvecs or ivecs file (gzip when the name ends in .gz)
// as rows of float32 (ivecs values are converted); at most limit rows when
// limit > 0.
func readVecs(t testing.TB, path string, limit int) [][]float32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 1<<20)
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = bufio.NewReaderSize(zr, 1<<20)
	}
	isInt := strings.Contains(path, ".ivecs")
	var rows [][]float32
	var hdr [4]byte
	for limit <= 0 || len(rows) < limit {
		if _, err := io.ReadFull(r, hdr[:]); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		d := int(binary.LittleEndian.Uint32(hdr[:]))
		buf := make([]byte, 4*d)
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatal(err)
		}
		row := make([]float32, d)
		for i := range row {
			u := binary.LittleEndian.Uint32(buf[4*i:])
			if isInt {
				row[i] = float32(int32(u))
			} else {
				row[i] = math.Float32frombits(u)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

type dataset struct {
	name    string
	metric  quant.Metric
	base    [][]float32
	queries [][]float32
	gt      [][]uint32 // top 10 per query
}

func loadDataset(t testing.TB, name string) *dataset {
	t.Helper()
	dir := datasetDir(t)
	ds := &dataset{name: name}
	var base, gt string
	switch name {
	case "sift10k":
		ds.metric = quant.L2
		base, gt = "sift10k/base.fvecs.gz", "sift10k/groundtruth.ivecs"
		ds.queries = readVecs(t, filepath.Join(dir, "sift10k/query.fvecs"), 0)
	case "glove10k", "glove100k":
		ds.metric = quant.Cosine
		base, gt = "glove100/base_10k.fvecs", "glove100/groundtruth_10k.ivecs"
		if name == "glove100k" {
			base, gt = "glove100/base_100k.fvecs.gz", "glove100/groundtruth_100k.ivecs"
		}
		ds.queries = readVecs(t, filepath.Join(dir, "glove100/query.fvecs"), 0)
	default:
		t.Fatalf("unknown dataset %s", name)
	}
	ds.base = readVecs(t, filepath.Join(dir, base), 0)
	for _, row := range readVecs(t, filepath.Join(dir, gt), 0) {
		ids := make([]uint32, 10)
		for i := range ids {
			ids[i] = uint32(row[i])
		}
		ds.gt = append(ds.gt, ids)
	}
	return ds
}

// synthetic returns n L2-normalized vectors of dimension dim with low
// intrinsic dimension: a Gaussian mixture in a 16-d latent space mapped
// through a fixed random dim×16 matrix, plus a little isotropic noise.
func synthetic(n, dim int, seed uint64) [][]float32 {
	const latent = 16
	mr := rand.New(rand.NewPCG(99, uint64(dim))) // the map depends on dim only
	proj := make([]float32, dim*latent)
	for i := range proj {
		proj[i] = float32(mr.NormFloat64())
	}
	centers := make([][latent]float64, 32)
	for i := range centers {
		for j := range centers[i] {
			centers[i][j] = 2 * mr.NormFloat64()
		}
	}
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]float32, n)
	for i := range out {
		c := &centers[r.IntN(len(centers))]
		var z [latent]float64
		for j := range z {
			z[j] = c[j] + r.NormFloat64()
		}
		v := make([]float32, dim)
		var norm float64
		for d := range v {
			var x float64
			for j := range z {
				x += float64(proj[d*latent+j]) * z[j]
			}
			x += 0.3 * r.NormFloat64()
			v[d] = float32(x)
			norm += x * x
		}
		for d := range v {
			v[d] = float32(float64(v[d]) / math.Sqrt(norm))
		}
		out[i] = v
	}
	return out
}

// bruteForce returns the exact k nearest of q among the allowed rows.
func bruteForce(m quant.Metric, rows [][]float32, q []float32, k int, allow func(int) bool) []uint32 {
	pq, _ := prepare(q, len(q), m)
	type hit struct {
		d  float32
		id uint32
	}
	var hits []hit
	for i, r := range rows {
		if allow != nil && !allow(i) {
			continue
		}
		pr, _ := prepare(r, len(r), m)
		hits = append(hits, hit{quant.FloatDistance(m, pq, pr), uint32(i)})
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.d != b.d {
			if a.d < b.d {
				return -1
			}
			return 1
		}
		return int(a.id) - int(b.id)
	})
	out := make([]uint32, 0, k)
	for _, h := range hits[:min(k, len(hits))] {
		out = append(out, h.id)
	}
	return out
}

// recallAt is |got ∩ want| / |want|.
func recallAt(got []Result, want []uint32) float64 {
	if len(want) == 0 {
		return 1
	}
	hit := 0
	for _, w := range want {
		for _, g := range got {
			if g.ID == w {
				hit++
				break
			}
		}
	}
	return float64(hit) / float64(len(want))
}

func build(t testing.TB, cfg Config, rows [][]float32) *Index {
	t.Helper()
	ix, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		id, err := ix.Insert(r)
		if err != nil {
			t.Fatal(err)
		}
		if int(id) != i {
			t.Fatalf("insert %d got id %d", i, id)
		}
	}
	return ix
}
