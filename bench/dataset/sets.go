package dataset

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/engramdb/engram/quant"
)

// Set is an ANN benchmark: base vectors, queries, the metric, and for each
// query the ids of its exact nearest neighbours, nearest first.
type Set struct {
	Name        string
	Metric      quant.Metric
	Base        *Vectors
	Queries     *Vectors
	GroundTruth [][]int32
}

// FindRoot walks up from dir to the first directory holding
// shared/datasets and returns that datasets directory. The ENGRAM_DATASETS
// environment variable, when set, wins.
func FindRoot(dir string) (string, error) {
	if env := os.Getenv("ENGRAM_DATASETS"); env != "" {
		return env, nil
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "shared", "datasets")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoDatasets
		}
		dir = parent
	}
}

// catalog lists the vector sets under shared/datasets.
var catalog = map[string]struct {
	metric          quant.Metric
	base, query, gt string
}{
	"sift10k":       {quant.L2, "sift10k/base.fvecs.gz", "sift10k/query.fvecs", "sift10k/groundtruth.ivecs"},
	"glove100-10k":  {quant.Cosine, "glove100/base_10k.fvecs", "glove100/query.fvecs", "glove100/groundtruth_10k.ivecs"},
	"glove100-100k": {quant.Cosine, "glove100/base_100k.fvecs.gz", "glove100/query.fvecs", "glove100/groundtruth_100k.ivecs"},
}

// Names returns the names Load accepts.
func Names() []string {
	var ns []string
	for n := range catalog {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Paths returns the base, query and ground-truth files of a named set.
func Paths(root, name string) (base, query, gt string, m quant.Metric, err error) {
	c, ok := catalog[name]
	if !ok {
		return "", "", "", 0, fmt.Errorf("dataset: unknown set %q (have %v)", name, Names())
	}
	return filepath.Join(root, c.base), filepath.Join(root, c.query), filepath.Join(root, c.gt), c.metric, nil
}

// Load reads a named set from root (a shared/datasets directory).
func Load(root, name string) (*Set, error) {
	base, query, gt, m, err := Paths(root, name)
	if err != nil {
		return nil, err
	}
	return LoadFiles(name, base, query, gt, m)
}

// LoadFiles reads a set from explicit files and checks that they agree.
func LoadFiles(name, basePath, queryPath, gtPath string, m quant.Metric) (*Set, error) {
	s := &Set{Name: name, Metric: m}
	var err error
	if s.Base, err = LoadFvecs(basePath, 0); err != nil {
		return nil, err
	}
	if s.Queries, err = LoadFvecs(queryPath, 0); err != nil {
		return nil, err
	}
	if s.GroundTruth, err = LoadIvecs(gtPath, 0); err != nil {
		return nil, err
	}
	if s.Base.Dim != s.Queries.Dim {
		return nil, fmt.Errorf("dataset %s: base dimension %d, query dimension %d", name, s.Base.Dim, s.Queries.Dim)
	}
	if len(s.GroundTruth) != s.Queries.Len() {
		return nil, fmt.Errorf("dataset %s: %d ground-truth rows for %d queries", name, len(s.GroundTruth), s.Queries.Len())
	}
	n := int32(s.Base.Len())
	for i, row := range s.GroundTruth {
		for _, id := range row {
			if id < 0 || id >= n {
				return nil, fmt.Errorf("dataset %s: ground truth row %d has id %d outside [0, %d)", name, i, id, n)
			}
		}
	}
	return s, nil
}

// Normalized returns a copy of v with every row scaled to unit L2 norm
// (zero rows stay zero), as Cosine requires before quantization.
func Normalized(v *Vectors) *Vectors {
	out := &Vectors{Dim: v.Dim, Data: make([]float32, len(v.Data))}
	copy(out.Data, v.Data)
	for i := 0; i < out.Len(); i++ {
		Normalize(out.Row(i))
	}
	return out
}

// Normalize scales x to unit L2 norm in place; a zero vector is left as is.
func Normalize(x []float32) {
	n := quant.DotFloat32(x, x)
	if n == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(float64(n)))
	for i := range x {
		x[i] *= inv
	}
}

// RecallAtK returns |got[:k] ∩ truth[:k]| / k, the usual recall@k.
func RecallAtK(got []uint32, truth []int32, k int) float64 {
	if k <= 0 {
		return 0
	}
	if len(truth) > k {
		truth = truth[:k]
	}
	if len(got) > k {
		got = got[:k]
	}
	hits := 0
	for _, g := range got {
		for _, t := range truth {
			if int32(g) == t {
				hits++
				break
			}
		}
	}
	return float64(hits) / float64(k)
}
