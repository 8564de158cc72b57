package keyword

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/engramdb/engram/bench/beir"
)

type swDoc struct {
	tf      map[string]float64
	length  float64
	session string
}

type swSet struct {
	name string
	ds   *beir.Dataset
	base [][]string // tokens per doc

	ctxDocs []swDoc
	ctxDF   map[string]int
	ctxLen  float64
}

type swCfg struct {
	k1, b     float64
	ctxW      float64 // neighbour weight in the document
	ctxN      int     // neighbours each side
	prevOnly  bool
	prop      float64 // score propagation from neighbours
	ctxSum    float64 // neighbours as a separate BM25 field, scores summed with this weight
	dfMerged  bool    // document frequency counts context occurrences too
	qstop     bool
	rm3       int // feedback docs (0 = off)
	rm3Terms  int
	rm3Weight float64
}

var swQueryStop = map[string]bool{}

func init() {
	for _, w := range strings.Fields("what when where who whom whose which why how did does do doe is are was were be been has have had would could should can will shall may might i me my you your yours he him his she her hers it its we us our they them their this that these those am an the of a") {
		for _, t := range Tokens(w) {
			swQueryStop[t] = true
		}
		swQueryStop[w] = true
	}
}

func swEval(s *swSet, c swCfg, filter func(q beir.Query) bool) float64 {
	docs := make([]swDoc, len(s.base))
	df := map[string]int{}
	var total float64
	for i, toks := range s.base {
		d := swDoc{tf: map[string]float64{}, session: s.ds.Docs[i].Session}
		for _, t := range toks {
			d.tf[t]++
		}
		for t := range d.tf {
			df[t]++
		}
		d.length = float64(len(toks))
		if c.ctxW > 0 && d.session != "" {
			for off := -c.ctxN; off <= c.ctxN; off++ {
				j := i + off
				if off == 0 || j < 0 || j >= len(s.base) || s.ds.Docs[j].Session != d.session || (c.prevOnly && off > 0) {
					continue
				}
				for _, t := range s.base[j] {
					d.tf[t] += c.ctxW
				}
				d.length += c.ctxW * float64(len(s.base[j]))
			}
		}
		if c.dfMerged {
			for t := range d.tf {
				if !slices.Contains(toks, t) {
					df[t]++
				}
			}
		}
		total += d.length
		docs[i] = d
	}
	avg := total / float64(len(docs))
	n := float64(len(docs))
	idf := func(t string) float64 {
		f := float64(df[t])
		return math.Log(1 + (n-f+0.5)/(f+0.5))
	}
	postings := map[string][]int{}
	for i, d := range docs {
		for t := range d.tf {
			postings[t] = append(postings[t], i)
		}
	}
	score := func(q map[string]float64, session string) map[int]float64 {
		sc := map[int]float64{}
		for t, qw := range q {
			w := idf(t) * qw * (c.k1 + 1)
			for _, i := range postings[t] {
				d := &docs[i]
				if session != "" && d.session != session {
					continue
				}
				f := d.tf[t]
				sc[i] += w * f / (f + c.k1*(1-c.b+c.b*d.length/avg))
			}
		}
		return sc
	}
	top := func(sc map[int]float64, k int) []int {
		ids := make([]int, 0, len(sc))
		for i := range sc {
			ids = append(ids, i)
		}
		sort.Slice(ids, func(a, b int) bool {
			if sc[ids[a]] != sc[ids[b]] {
				return sc[ids[a]] > sc[ids[b]]
			}
			return ids[a] < ids[b]
		})
		if len(ids) > k {
			ids = ids[:k]
		}
		return ids
	}
	run := map[string][]string{}
	qrels := beir.Qrels{}
	for _, q := range s.ds.Judged() {
		if filter != nil && !filter(q) {
			continue
		}
		qrels[q.ID] = s.ds.Qrels[q.ID]
		qv := map[string]float64{}
		for _, t := range Tokens(q.Text) {
			if c.qstop && swQueryStop[t] {
				continue
			}
			qv[t]++
		}
		sc := score(qv, q.Session)
		if c.rm3 > 0 {
			fb := top(sc, c.rm3)
			exp := map[string]float64{}
			var z float64
			for _, i := range fb {
				z += sc[i]
			}
			for _, i := range fb {
				d := docs[i]
				for t, f := range d.tf {
					exp[t] += (sc[i] / z) * f / d.length * idf(t)
				}
			}
			type tw struct {
				t string
				w float64
			}
			var ts []tw
			for t, w := range exp {
				ts = append(ts, tw{t, w})
			}
			sort.Slice(ts, func(a, b int) bool { return ts[a].w > ts[b].w })
			if len(ts) > c.rm3Terms {
				ts = ts[:c.rm3Terms]
			}
			var ez float64
			for _, x := range ts {
				ez += x.w
			}
			var qz float64
			for _, w := range qv {
				qz += w
			}
			q2 := map[string]float64{}
			for t, w := range qv {
				q2[t] += (1 - c.rm3Weight) * w / qz
			}
			for _, x := range ts {
				q2[x.t] += c.rm3Weight * x.w / ez
			}
			sc = score(q2, q.Session)
		}
		if c.prop > 0 {
			sc2 := map[int]float64{}
			for i, v := range sc {
				sc2[i] += v
				for _, j := range []int{i - 1, i + 1} {
					if j >= 0 && j < len(docs) && docs[j].session == docs[i].session && docs[i].session != "" {
						sc2[j] += c.prop * v
					}
				}
			}
			sc = sc2
		}
		if c.ctxSum > 0 {
			for i, v := range ctxScore(s, c, qv, q.Session) {
				sc[i] += c.ctxSum * v
			}
		}
		var ids []string
		for _, i := range top(sc, 10) {
			ids = append(ids, s.ds.Docs[i].ID)
		}
		run[q.ID] = ids
	}
	return beir.Evaluate(run, qrels).NDCG10
}

// ctxScore scores the neighbours of each document (±ctxN, same session) as a document of their
// own, with their own statistics.
func ctxScore(s *swSet, c swCfg, q map[string]float64, session string) map[int]float64 {
	if s.ctxDocs == nil {
		s.ctxDocs = make([]swDoc, len(s.base))
		s.ctxDF = map[string]int{}
		for i := range s.base {
			d := swDoc{tf: map[string]float64{}, session: s.ds.Docs[i].Session}
			for off := -c.ctxN; off <= c.ctxN; off++ {
				j := i + off
				if off == 0 || j < 0 || j >= len(s.base) || s.ds.Docs[j].Session != d.session || d.session == "" {
					continue
				}
				for _, t := range s.base[j] {
					d.tf[t]++
				}
				d.length += float64(len(s.base[j]))
			}
			for t := range d.tf {
				s.ctxDF[t]++
			}
			s.ctxLen += d.length
			s.ctxDocs[i] = d
		}
	}
	n := float64(len(s.ctxDocs))
	avg := s.ctxLen / n
	sc := map[int]float64{}
	for i, d := range s.ctxDocs {
		if session != "" && d.session != session {
			continue
		}
		for t, qw := range q {
			f := d.tf[t]
			if f == 0 {
				continue
			}
			df := float64(s.ctxDF[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			sc[i] += idf * qw * (c.k1 + 1) * f / (f + c.k1*(1-c.b+c.b*d.length/avg))
		}
	}
	return sc
}

func TestConversationLocomoSweep(t *testing.T) {
	if !*sweep {
		t.Skip("measurement only; pass -sweep")
	}
	root, ok := beir.FindDatasets()
	if !ok {
		t.Skip("shared/datasets not found")
	}
	ds, err := beir.Load(filepath.Join(root, "text", "locomo-dev"), "")
	if err != nil {
		t.Fatal(err)
	}
	set := &swSet{name: "locomo-dev", ds: ds}
	for _, d := range ds.Docs {
		set.base = append(set.base, Tokens(d.Content()))
	}
	tune := func(q beir.Query) bool {
		return q.Session == "conv-26" || q.Session == "conv-30" || q.Session == "conv-41"
	}
	held := func(q beir.Query) bool { return !tune(q) }
	for _, x := range []struct {
		name string
		c    swCfg
	}{
		{"ctx2w0.33df", swCfg{k1: 1.2, b: 0.75, ctxN: 2, ctxW: 1.0 / 3, dfMerged: true}},
		{"ctx2w0.33", swCfg{k1: 1.2, b: 0.75, ctxN: 2, ctxW: 1.0 / 3}},
		{"ctx2w0.33dfqstop", swCfg{k1: 1.2, b: 0.75, ctxN: 2, ctxW: 1.0 / 3, dfMerged: true, qstop: true}},
		{"ctx3w0.33df", swCfg{k1: 1.2, b: 0.75, ctxN: 3, ctxW: 1.0 / 3, dfMerged: true}},
		{"ctx2w0.5df", swCfg{k1: 1.2, b: 0.75, ctxN: 2, ctxW: 0.5, dfMerged: true}},
		{"ctx2w0.25df", swCfg{k1: 1.2, b: 0.75, ctxN: 2, ctxW: 0.25, dfMerged: true}},
		{"sum0.2", swCfg{k1: 1.2, b: 0.75, ctxN: 2, ctxSum: 0.2}},
		{"sum0.35", swCfg{k1: 1.2, b: 0.75, ctxN: 2, ctxSum: 0.35}},
		{"sum0.5", swCfg{k1: 1.2, b: 0.75, ctxN: 2, ctxSum: 0.5}},
		{"sum0.7", swCfg{k1: 1.2, b: 0.75, ctxN: 2, ctxSum: 0.7}},
		{"ctx3w0.25", swCfg{k1: 1.2, b: 0.75, ctxN: 3, ctxW: 0.25}},
		{"ctx2w0.3", swCfg{k1: 1.2, b: 0.75, ctxN: 2, ctxW: 0.3}},
		{"ctx2w0.35qstop", swCfg{k1: 1.2, b: 0.75, ctxN: 2, ctxW: 0.35, qstop: true}},
		{"ctx2w0.35k0.9b0.4", swCfg{k1: 0.9, b: 0.4, ctxN: 2, ctxW: 0.35}},
		{"ctx2w0.35b0.5", swCfg{k1: 1.2, b: 0.5, ctxN: 2, ctxW: 0.35}},
		{"ctx2w0.35rm3", swCfg{k1: 1.2, b: 0.75, ctxN: 2, ctxW: 0.35, rm3: 5, rm3Terms: 10, rm3Weight: 0.3}},
		{"prop0.35", swCfg{k1: 1.2, b: 0.75, prop: 0.35}},
	} {
		t.Logf("%-20s locomo=%.4f tune=%.4f held=%.4f", x.name, swEval(set, x.c, nil), swEval(set, x.c, tune), swEval(set, x.c, held))
	}
}

func TestConversationSweep(t *testing.T) {
	if !*sweep {
		t.Skip("measurement only; pass -sweep")
	}
	root, ok := beir.FindDatasets()
	if !ok {
		t.Skip("shared/datasets not found")
	}
	var sets []*swSet
	for _, s := range []struct{ dir, prefix string }{{"locomo-dev", ""}, {"scifact", ""}, {"cranfield", ""}, {"cisi", ""}, {"rgb", "en_"}, {"rgb", "zh_"}} {
		ds, err := beir.Load(filepath.Join(root, "text", s.dir), s.prefix)
		if err != nil {
			t.Fatal(err)
		}
		set := &swSet{name: s.prefix + s.dir, ds: ds}
		for _, d := range ds.Docs {
			set.base = append(set.base, Tokens(d.Content()))
		}
		sets = append(sets, set)
	}
	tune := func(q beir.Query) bool {
		return q.Session == "conv-26" || q.Session == "conv-30" || q.Session == "conv-41"
	}
	held := func(q beir.Query) bool { return !tune(q) }
	base := swCfg{k1: 1.2, b: 0.75}
	cfgs := map[string]swCfg{}
	add := func(name string, f func(*swCfg)) {
		c := base
		f(&c)
		cfgs[name] = c
	}
	add("base", func(c *swCfg) {})
	add("k0.9b0.4", func(c *swCfg) { c.k1, c.b = 0.9, 0.4 })
	add("qstop", func(c *swCfg) { c.qstop = true })
	for _, w := range []float64{0.2, 0.35, 0.5} {
		add(fmt.Sprintf("ctx1w%.2f", w), func(c *swCfg) { c.ctxW, c.ctxN = w, 1 })
		add(fmt.Sprintf("ctx2w%.2f", w), func(c *swCfg) { c.ctxW, c.ctxN = w, 2 })
		add(fmt.Sprintf("prop%.2f", w), func(c *swCfg) { c.prop = w })
	}
	add("ctx1prev0.35", func(c *swCfg) { c.ctxW, c.ctxN, c.prevOnly = 0.35, 1, true })
	add("rm3", func(c *swCfg) { c.rm3, c.rm3Terms, c.rm3Weight = 10, 10, 0.3 })
	add("qstop+ctx1w0.35", func(c *swCfg) { c.qstop, c.ctxW, c.ctxN = true, 0.35, 1 })
	names := make([]string, 0, len(cfgs))
	for n := range cfgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := cfgs[n]
		line := fmt.Sprintf("%-18s", n)
		for _, s := range sets {
			if s.name == "locomo-dev" {
				line += fmt.Sprintf(" locomo=%.4f tune=%.4f held=%.4f", swEval(s, c, nil), swEval(s, c, tune), swEval(s, c, held))
				continue
			}
			if c.ctxW > 0 || c.prop > 0 {
				continue // no sessions: identical to base
			}
			line += fmt.Sprintf(" %s=%.4f", s.name, swEval(s, c, nil))
		}
		t.Log(line)
	}
}

// TestChineseQueryStopSweep measures dropping Chinese question words from queries on rgb zh_.
func TestChineseQueryStopSweep(t *testing.T) {
	if !*sweep {
		t.Skip("measurement only; pass -sweep")
	}
	root, ok := beir.FindDatasets()
	if !ok {
		t.Skip("shared/datasets not found")
	}
	ds, err := beir.Load(filepath.Join(root, "text", "rgb"), "zh_")
	if err != nil {
		t.Fatal(err)
	}
	set := &swSet{name: "zh_rgb", ds: ds}
	for _, d := range ds.Docs {
		set.base = append(set.base, Tokens(d.Content()))
	}
	saved := swQueryStop
	defer func() { swQueryStop = saved }()
	t.Logf("none %.4f", swEval(set, swCfg{k1: 1.2, b: 0.75}, nil))
	for _, list := range []string{
		"什么 谁 哪 哪里 哪个 怎么 怎样 如何 为什么 吗 呢 多少 几",
		"什么 谁 哪 哪里 哪个 怎么 怎样 如何 为什么 吗 呢 多少 几 是 的 了 在 有",
	} {
		swQueryStop = map[string]bool{}
		for _, w := range strings.Fields(list) {
			swQueryStop[w] = true
			// a question word's characters and bigrams
			for _, tk := range Tokens(w) {
				swQueryStop[tk] = true
			}
		}
		t.Logf("%q %.4f", list, swEval(set, swCfg{k1: 1.2, b: 0.75, qstop: true}, nil))
	}
}
