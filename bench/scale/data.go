package scale

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/engramdb/engram/memory"
)

// Config sizes a run. Zero fields take the defaults below.
type Config struct {
	N        int    // memories (default 100,000)
	Dim      int    // vector dimension (default 1024)
	Sessions int    // sessions (default 10,000)
	Clusters int    // mixture components (default 1,000)
	Seed     uint64 // data seed (default 1)
	// Queries is how many recalls through the memory layer are timed
	// (default 500); BandQueries how many session-filtered searches per
	// band (default 100).
	Queries, BandQueries int
	// Dir is the store directory; it must not exist or be empty.
	Dir string
}

// Heavy is the share of the store each heavy session holds; every other
// session is small. The bands reported are these sessions.
var Heavy = []float64{0.10, 0.05, 0.02, 0.01, 0.005, 0.001, 0.0001}

func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.N, 100_000)
	def(&c.Dim, 1024)
	def(&c.Sessions, 10_000)
	def(&c.Clusters, 1000)
	def(&c.Queries, 500)
	def(&c.BandQueries, 100)
	if c.Seed == 0 {
		c.Seed = 1
	}
	switch {
	case c.N < 1000 || c.N > 50_000_000:
		return c, fmt.Errorf("scale: N %d outside 1,000..50,000,000", c.N)
	case c.Dim < 8 || c.Dim > 4096:
		return c, fmt.Errorf("scale: Dim %d outside 8..4096", c.Dim)
	case c.Sessions <= len(Heavy) || c.Sessions > c.N/2:
		return c, fmt.Errorf("scale: Sessions %d outside %d..N/2", c.Sessions, len(Heavy)+1)
	case c.Clusters < 2 || c.Clusters > c.N:
		return c, fmt.Errorf("scale: Clusters %d outside 2..N", c.Clusters)
	case c.Queries < 1 || c.BandQueries < 1:
		return c, errors.New("scale: Queries and BandQueries must be positive")
	case c.Dir == "":
		return c, errors.New("scale: Dir is required")
	}
	return c, nil
}

// data is the generated store: everything about memory i is derived from
// (Seed, i), so vectors are made batch by batch and never all held.
type data struct {
	cfg      Config
	centres  [][]float32 // latent
	proj     []float32   // Dim×latent
	session  []int32     // per memory
	home     [][2]int32  // per session: two home clusters
	sizes    []int       // per session
	heavy    []int       // session index of each Heavy share
	vocab    [][]string  // per cluster
	common   []string
	baseTime time.Time
}

// The mixture lives in a latent space mapped into Dim dimensions by a
// fixed random matrix, plus a little isotropic noise: embeddings have a
// low intrinsic dimension, and isotropic noise in 1024 dimensions would
// make every neighbour nearly equidistant (a set no index, nor a user,
// sees).
const (
	latent = 32
	noise  = 0.6  // within-cluster spread per latent component (centres: unit variance)
	iso    = 0.05 // isotropic noise per output component, relative
)

func newData(cfg Config) *data {
	r := rand.New(rand.NewPCG(cfg.Seed, 0))
	d := &data{cfg: cfg, baseTime: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	d.centres = make([][]float32, cfg.Clusters)
	for i := range d.centres {
		v := make([]float32, latent)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		d.centres[i] = v
	}
	d.proj = make([]float32, cfg.Dim*latent)
	for i := range d.proj {
		d.proj[i] = float32(r.NormFloat64() / math.Sqrt(latent))
	}
	d.home = make([][2]int32, cfg.Sessions)
	for i := range d.home {
		d.home[i] = [2]int32{int32(r.IntN(cfg.Clusters)), int32(r.IntN(cfg.Clusters))}
	}
	// Heavy sessions take their shares; the rest go to the other sessions
	// with a mild skew (density ∝ 1/sqrt(rank)): most small, none huge.
	d.session = make([]int32, cfg.N)
	d.sizes = make([]int, cfg.Sessions)
	var order []int32
	for h, share := range Heavy {
		n := max(1, int(math.Round(share*float64(cfg.N))))
		d.heavy = append(d.heavy, h)
		for range n {
			order = append(order, int32(h))
		}
	}
	rest := cfg.Sessions - len(Heavy)
	for i := len(Heavy); i < rest+len(Heavy); i++ { // every session at least once
		order = append(order, int32(i))
	}
	for len(order) < cfg.N {
		u := r.Float64()
		order = append(order, int32(len(Heavy)+int(u*u*float64(rest))))
	}
	order = order[:cfg.N]
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for i, s := range order {
		d.session[i] = s
		d.sizes[s]++
	}
	syll := []string{"ka", "lo", "mi", "ra", "tu", "ven", "so", "pel", "dar", "qui", "zen", "bo", "fi", "nu", "tra", "gol"}
	word := func() string {
		var b strings.Builder
		for range 2 + r.IntN(2) {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		return b.String()
	}
	d.vocab = make([][]string, cfg.Clusters)
	for i := range d.vocab {
		for range 12 {
			d.vocab[i] = append(d.vocab[i], word())
		}
	}
	d.common = []string{"today", "meeting", "remember", "user", "said", "prefers", "project", "later", "note", "again"}
	return d
}

// cluster returns memory i's cluster and its generator.
func (d *data) rng(i int) *rand.Rand { return rand.New(rand.NewPCG(d.cfg.Seed, uint64(i)+1)) }

func (d *data) clusterOf(r *rand.Rand, s int32) int {
	if r.Float64() < 0.7 {
		return int(d.home[s][r.IntN(2)])
	}
	return r.IntN(d.cfg.Clusters)
}

// around returns a point of cluster c (spread sigma), unit length.
func (d *data) around(r *rand.Rand, c int, sigma float64) []float32 {
	var z [latent]float64
	for j, x := range d.centres[c] {
		z[j] = float64(x) + sigma*r.NormFloat64()
	}
	v := make([]float32, d.cfg.Dim)
	var norm float64
	for i := range v {
		row := d.proj[i*latent : (i+1)*latent]
		var y float64
		for j, p := range row {
			y += float64(p) * z[j]
		}
		y += iso * r.NormFloat64()
		v[i] = float32(y)
		norm += y * y
	}
	inv := 1 / math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

func (d *data) text(r *rand.Rand, c int) string {
	var b strings.Builder
	for k := range 10 {
		if k > 0 {
			b.WriteByte(' ')
		}
		if r.IntN(3) == 0 {
			b.WriteString(d.common[r.IntN(len(d.common))])
		} else {
			b.WriteString(d.vocab[c][r.IntN(len(d.vocab[c]))])
		}
	}
	return b.String()
}

func sessionName(s int32) string { return fmt.Sprintf("s%05d", s) }
func memoryID(i int) string      { return fmt.Sprintf("m%08d", i) }

// memory returns memory i.
func (d *data) memory(i int) memory.Memory {
	r := d.rng(i)
	s := d.session[i]
	c := d.clusterOf(r, s)
	t := d.baseTime.Add(time.Duration(i) * time.Second)
	return memory.Memory{
		ID: memoryID(i), Session: sessionName(s), Text: d.text(r, c), Source: "scale",
		Importance: 0.5, Created: t, Updated: t, Vector: d.around(r, c, noise),
	}
}

// query returns a query vector and text for session s: near one of its
// home clusters when onTopic, else near any cluster.
func (d *data) query(r *rand.Rand, s int32, onTopic bool) ([]float32, string) {
	c := r.IntN(d.cfg.Clusters)
	if onTopic {
		c = int(d.home[s][r.IntN(2)])
	}
	return d.around(r, c, noise), d.text(r, c)
}

// hashEmbedder is the store's embedder: the benchmark gives every vector,
// so it only has to have the right dimension and a stable fingerprint;
// should anything ask it to embed, it hashes words into a vector.
type hashEmbedder struct{ dim int }

func (e hashEmbedder) Dim() int            { return e.dim }
func (e hashEmbedder) Fingerprint() string { return fmt.Sprintf("scale-hash/%d", e.dim) }
func (e hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, e.dim)
		for _, w := range strings.Fields(t) {
			h := fnv.New32a()
			_, _ = h.Write([]byte(w))
			v[int(h.Sum32())%e.dim]++
		}
		v[0] += 1e-3 // never the zero vector
		out[i] = v
	}
	return out, nil
}
