package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/engramdb/engram/bench/beir"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

var sweep = flag.Bool("sweep", false, "run the fusion measurement over the text sets (slow)")

type lists struct {
	kw, vec map[string]float64 // doc ID -> raw score
}

func fuseRank(l lists, f func(kw, maxKW, cos, maxCos float64) float64) []string {
	var maxKW, maxCos float64
	for _, v := range l.kw {
		maxKW = max(maxKW, v)
	}
	for _, v := range l.vec {
		maxCos = max(maxCos, v)
	}
	sc := map[string]float64{}
	for id := range l.kw {
		sc[id] = 0
	}
	for id := range l.vec {
		sc[id] = 0
	}
	ids := make([]string, 0, len(sc))
	for id := range sc {
		kn := 0.0
		if maxKW > 0 {
			kn = l.kw[id] / maxKW
		}
		sc[id] = f(kn, maxKW, max(0, l.vec[id]), maxCos)
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool {
		if sc[ids[a]] != sc[ids[b]] {
			return sc[ids[a]] > sc[ids[b]]
		}
		return ids[a] < ids[b]
	})
	if len(ids) > 10 {
		ids = ids[:10]
	}
	return ids
}

func TestFusionSweep(t *testing.T) {
	if !*sweep {
		t.Skip("measurement only; pass -sweep")
	}
	root, ok := beir.FindDatasets()
	if !ok {
		t.Skip("shared/datasets not found")
	}
	ctx := context.Background()
	emb, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ dir, prefix string }{{"locomo-dev", ""}, {"scifact", ""}, {"cranfield", ""}, {"cisi", ""}, {"rgb", "en_"}, {"rgb", "zh_"}} {
		ds, err := beir.Load(filepath.Join(root, "text", s.dir), s.prefix)
		if err != nil {
			t.Fatal(err)
		}
		texts := make([]string, len(ds.Docs))
		for i, d := range ds.Docs {
			texts[i] = d.Content()
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []float64{0} {
			st, err := memory.New(ctx, memory.NewMemBackend(), memory.Options{Embedder: emb, DedupThreshold: -1, ChunkChars: -1, MaxTextBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			ms := make([]memory.Memory, 0, len(ds.Docs))
			docID := func(id string) string { return id }
			t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			for i, d := range ds.Docs {
				if texts[i] == "" {
					continue
				}
				v := slices.Clone(vecs[i])
				if w > 0 {
					for off := -2; off <= 2; off++ {
						j := i + off
						if off == 0 || j < 0 || j >= len(ds.Docs) || ds.Docs[j].Session != d.Session {
							continue
						}
						for k := range v {
							v[k] += float32(w) * vecs[j][k]
						}
					}
				}
				ms = append(ms, memory.Memory{ID: d.ID, Session: d.Session, Text: texts[i], Importance: 0.5, Created: t0, Updated: t0, Vector: v})
			}
			if s.dir == "locomo-dev" {
				// As bench/cmd/retrieval remembers it: each session a conversation.
				var order []string
				turns := map[string][]memory.Turn{}
				for _, m := range ms {
					if turns[m.Session] == nil {
						order = append(order, m.Session)
					}
					turns[m.Session] = append(turns[m.Session], memory.Turn{Text: m.Text})
				}
				idOf := map[string]string{}
				i := 0
				for _, sess := range order {
					res, err := st.RememberConversation(ctx, sess, turns[sess], memory.RememberOptions{})
					if err != nil {
						t.Fatal(err)
					}
					for _, id := range res.IDs {
						idOf[id] = ms[i].ID
						i++
					}
				}
				docID = func(id string) string { return idOf[id] }
			} else if err := st.Import(ctx, ms); err != nil {
				t.Fatal(err)
			}
			got := map[string]lists{}
			_ = docID
			for _, q := range ds.Judged() {
				o := memory.RecallOptions{Session: q.Session, AllSessions: q.Session == "", K: 100, NoTouch: true, Decay: memory.Decay{Off: true}}
				l := lists{kw: map[string]float64{}, vec: map[string]float64{}}
				o.Mode = memory.ModeKeyword
				rs, err := st.Recall(ctx, q.Text, o)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rs {
					l.kw[docID(r.ID)] = r.Score.Keyword
				}
				o.Mode = memory.ModeVector
				if rs, err = st.Recall(ctx, q.Text, o); err != nil {
					t.Fatal(err)
				}
				for _, r := range rs {
					l.vec[docID(r.ID)] = r.Score.Vector
				}
				got[q.ID] = l
			}
			st.Close()
			eval := func(f func(kw, maxKW, cos, maxCos float64) float64) string {
				run := map[string][]string{}
				for id, l := range got {
					run[id] = fuseRank(l, f)
				}
				return fmt.Sprintf("%.4f", beir.Evaluate(run, ds.Qrels).NDCG10)
			}
			line := fmt.Sprintf("%s%s ctxW=%.2f", s.prefix, s.dir, w)
			line += " bm25=" + eval(func(kw, _, _, _ float64) float64 { return kw })
			line += " vec=" + eval(func(_, _, cos, _ float64) float64 { return cos })
			for _, wv := range []float64{0.1, 0.3, 0.5} {
				line += fmt.Sprintf(" w%.2f=", wv) + eval(func(kw, _, cos, _ float64) float64 { return wv*cos + (1-wv)*kw })
			}
			for _, wv := range []float64{} {
				line += fmt.Sprintf(" wmax%.1f=", wv) + eval(func(kw, _, cos, maxCos float64) float64 {
					if maxCos > 0 {
						cos /= maxCos
					}
					return wv*cos + (1-wv)*kw
				})
			}
			evalL := func(f func(l lists) float64) string {
				run := map[string][]string{}
				for id, l := range got {
					wv := f(l)
					run[id] = fuseRank(l, func(kw, _, cos, _ float64) float64 { return wv*cos + (1-wv)*kw })
				}
				return fmt.Sprintf("%.4f", beir.Evaluate(run, ds.Qrels).NDCG10)
			}
			topN := func(m map[string]float64, n int) []string {
				ids := make([]string, 0, len(m))
				for id := range m {
					ids = append(ids, id)
				}
				sort.Slice(ids, func(a, b int) bool {
					if m[ids[a]] != m[ids[b]] {
						return m[ids[a]] > m[ids[b]]
					}
					return ids[a] < ids[b]
				})
				return ids[:min(n, len(ids))]
			}
			for _, wv := range []float64{0.3, 0.5} {
				line += fmt.Sprintf(" agree%.1f=", wv) + evalL(func(l lists) float64 {
					a, b := topN(l.kw, 10), topN(l.vec, 10)
					n := 0
					for _, x := range a {
						if slices.Contains(b, x) {
							n++
						}
					}
					return wv * float64(n) / 10
				})
				line += fmt.Sprintf(" peak%.1f=", wv) + evalL(func(l lists) float64 {
					a, b := topN(l.kw, 10), topN(l.vec, 10)
					if len(a) < 2 || len(b) < 2 {
						return wv
					}
					sk := 1 - l.kw[a[len(a)-1]]/l.kw[a[0]]
					sv := 1 - l.vec[b[len(b)-1]]/l.vec[b[0]]
					if sk+sv == 0 {
						return wv
					}
					return wv * sv / (wv*sv + (1-wv)*sk)
				})
				line += fmt.Sprintf(" topcos%.1f=", wv) + evalL(func(l lists) float64 {
					a, b := topN(l.kw, 1), topN(l.vec, 1)
					if len(a) == 0 || len(b) == 0 || l.vec[b[0]] <= 0 {
						return wv
					}
					return wv * l.vec[a[0]] / l.vec[b[0]]
				})
			}
			_ = math.Abs
			t.Log(line)
		}
	}
}

// TestFusionSweepLocomo measures, on locomo-dev, vector-side context (a turn's vector mixed with
// its neighbours') and fusion variants.
func TestFusionSweepLocomo(t *testing.T) {
	if !*sweep {
		t.Skip("measurement only; pass -sweep")
	}
	root, ok := beir.FindDatasets()
	if !ok {
		t.Skip("shared/datasets not found")
	}
	ctx := context.Background()
	emb, _ := lexical.New(lexical.Options{})
	ds, err := beir.Load(filepath.Join(root, "text", "locomo-dev"), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []float64{0, 0.35, 0.7} {
		st, err := memory.New(ctx, memory.NewMemBackend(), memory.Options{Embedder: emb, DedupThreshold: -1, ChunkChars: -1})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		turns := map[string][]beir.Doc{}
		for _, d := range ds.Docs {
			if turns[d.Session] == nil {
				order = append(order, d.Session)
			}
			turns[d.Session] = append(turns[d.Session], d)
		}
		idOf := map[string]string{}
		for _, sess := range order {
			var ts []memory.Turn
			for _, d := range turns[sess] {
				ts = append(ts, memory.Turn{Text: d.Text})
			}
			res, err := st.RememberConversation(ctx, sess, ts, memory.RememberOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ms, _ := st.Get(ctx, res.IDs...)
			for i := range ms {
				idOf[ms[i].ID] = turns[sess][i].ID
			}
			if w > 0 {
				for i := range ms {
					for off := -2; off <= 2; off++ {
						j := i + off
						if off == 0 || j < 0 || j >= len(ms) {
							continue
						}
						for k := range ms[i].Vector {
							ms[i].Vector[k] += float32(w) * ms[j].Vector[k]
						}
					}
				}
				for i := range ms {
					ms[i].Vector = nil
				}
				fresh, _ := st.Get(ctx, res.IDs...)
				for i := range ms {
					v := slices.Clone(fresh[i].Vector)
					for off := -2; off <= 2; off++ {
						j := i + off
						if off == 0 || j < 0 || j >= len(ms) {
							continue
						}
						for k := range v {
							v[k] += float32(w) * fresh[j].Vector[k]
						}
					}
					ms[i].Vector = v
				}
				if err := st.Import(ctx, ms); err != nil {
					t.Fatal(err)
				}
			}
		}
		got := map[string]lists{}
		for _, q := range ds.Judged() {
			o := memory.RecallOptions{Session: q.Session, K: 100, NoTouch: true, Decay: memory.Decay{Off: true}}
			l := lists{kw: map[string]float64{}, vec: map[string]float64{}}
			o.Mode = memory.ModeKeyword
			rs, _ := st.Recall(ctx, q.Text, o)
			for _, r := range rs {
				l.kw[idOf[r.ID]] = r.Score.Keyword
			}
			o.Mode = memory.ModeVector
			rs, _ = st.Recall(ctx, q.Text, o)
			for _, r := range rs {
				l.vec[idOf[r.ID]] = r.Score.Vector
			}
			got[q.ID] = l
		}
		eval := func(f func(kw, maxKW, cos, maxCos float64) float64, restrict bool) string {
			run := map[string][]string{}
			for id, l := range got {
				if restrict && len(l.kw) >= 10 {
					l = lists{kw: l.kw, vec: maps.Clone(l.vec)}
					for d := range l.vec {
						if _, ok := l.kw[d]; !ok {
							delete(l.vec, d)
						}
					}
				}
				run[id] = fuseRank(l, f)
			}
			return fmt.Sprintf("%.4f", beir.Evaluate(run, ds.Qrels).NDCG10)
		}
		line := fmt.Sprintf("locomo vecCtx=%.2f bm25=%s vec=%s", w, eval(func(kw, _, _, _ float64) float64 { return kw }, false), eval(func(_, _, c, _ float64) float64 { return c }, false))
		for _, wv := range []float64{0.1, 0.2, 0.3} {
			line += fmt.Sprintf(" w%.1f=%s r%.1f=%s", wv, eval(func(kw, _, c, _ float64) float64 { return wv*c + (1-wv)*kw }, false),
				wv, eval(func(kw, _, c, _ float64) float64 { return wv*c + (1-wv)*kw }, true))
		}
		t.Log(line)
		st.Close()
	}
}
