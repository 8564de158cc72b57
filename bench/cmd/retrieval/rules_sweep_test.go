package main

import (
	"fmt"
	"math"
)

func overlap(a, b []scored, n int) float64 {
	in := map[string]bool{}
	for _, s := range a[:min(n, len(a))] {
		in[s.ID] = true
	}
	c := 0
	for _, s := range b[:min(n, len(b))] {
		if in[s.ID] {
			c++
		}
	}
	return float64(c) / float64(n)
}

func meanStd(l []scored) (float64, float64) {
	if len(l) == 0 {
		return 0, 0
	}
	var m float64
	for _, s := range l {
		m += s.Score
	}
	m /= float64(len(l))
	var v float64
	for _, s := range l {
		v += (s.Score - m) * (s.Score - m)
	}
	return m, math.Sqrt(v / float64(len(l)))
}

func normZ(l []scored) map[string]float64 {
	m, sd := meanStd(l)
	out := map[string]float64{}
	if sd == 0 {
		return out
	}
	for _, s := range l {
		out[s.ID] = max(0, (s.Score-m)/sd)
	}
	return out
}

func normMinMax(l []scored) map[string]float64 {
	out := map[string]float64{}
	if len(l) < 2 {
		for _, s := range l {
			out[s.ID] = 1
		}
		return out
	}
	lo, hi := l[len(l)-1].Score, l[0].Score
	for _, s := range l {
		if hi > lo {
			out[s.ID] = (s.Score - lo) / (hi - lo)
		}
	}
	return out
}

func restrictTo(kw, vec []scored) []scored {
	if len(kw) == 0 {
		return vec
	}
	in := map[string]bool{}
	for _, s := range kw {
		in[s.ID] = true
	}
	out := []scored{}
	for _, s := range vec {
		if in[s.ID] {
			out = append(out, s)
		}
	}
	return out
}

func normCosMax(l []scored) map[string]float64 {
	m := map[string]float64{}
	for _, s := range l {
		m[s.ID] = max(0, s.Score/l[0].Score)
	}
	return m
}

func normRank(l []scored) map[string]float64 {
	m := map[string]float64{}
	for i, s := range l {
		m[s.ID] = 61 / (60 + float64(i+1))
	}
	return m
}

func extraRules(lex func(q *qlists) ([]scored, []scored)) []rule {
	var rs []rule
	restr := func(q *qlists) ([]scored, []scored) { return q.KW, restrictTo(q.KW, q.Vec) }
	for _, w := range []float64{0.2, 0.3, 0.5} {
		rs = append(rs, rule{fmt.Sprintf("restrict w%.1f", w), restr, weighted(fixed(w), normRaw)})
	}
	for _, w := range []float64{0.1, 0.2, 0.3} {
		rs = append(rs, rule{fmt.Sprintf("cosmax w%.1f", w), lex, weighted(fixed(w), normCosMax)})
		rs = append(rs, rule{fmt.Sprintf("vrank w%.1f", w), lex, weighted(fixed(w), normRank)})
	}
	for _, n := range []int{20, 50, 100} {
		for _, w := range []float64{0.3, 0.5} {
			rs = append(rs, rule{fmt.Sprintf("agree@%d %.1f", n, w), lex, weighted(func(kw, vec []scored) (float64, float64) {
				o := overlap(kw, vec, n)
				return w * o, 1 - w*o
			}, normRaw)})
		}
	}
	// Product and head rules: the cosine scaled by BM25, or counted only in BM25's top n.
	for _, a := range []float64{0.5, 1} {
		rs = append(rs, rule{fmt.Sprintf("kw*(1+%.1f cos)", a), lex, fuseScore(func(kw, cos float64, _ int) float64 { return kw * (1 + a*cos) })})
	}
	for _, n := range []int{5, 10, 20} {
		rs = append(rs, rule{fmt.Sprintf("head%d w0.3", n), lex, fuseScore(func(kw, cos float64, r int) float64 {
			if r == 0 || r > n {
				return 0.7 * kw
			}
			return 0.7*kw + 0.3*cos
		})})
	}
	for _, p := range []float64{4, 8} {
		rs = append(rs, rule{fmt.Sprintf("kw^%.0f w0.3", p), lex, fuseScore(func(kw, cos float64, _ int) float64 { return 0.7*kw + 0.3*cos*math.Pow(kw, p) })})
	}
	for _, g := range []string{"g0.30", "g0.50"} {
		for _, w := range []float64{0.1, 0.2, 0.5} {
			rs = append(rs, rule{fmt.Sprintf("combo%s w%.1f", g, w), func(q *qlists) ([]scored, []scored) { return q.KW, q.Combo[g] }, weighted(fixed(w), normRaw)})
		}
	}
	for _, w := range []float64{0.1, 0.2} {
		rs = append(rs, rule{fmt.Sprintf("lex w%.1f", w), lex, weighted(fixed(w), normRaw)})
	}
	for _, w := range []float64{0.5, 0.7} {
		rs = append(rs, rule{fmt.Sprintf("agree%.1f", w), lex, weighted(func(kw, vec []scored) (float64, float64) {
			o := overlap(kw, vec, 10)
			return w * o, 1 - w*o
		}, normRaw)})
	}
	for _, w := range []float64{0.2, 0.3, 0.5} {
		rs = append(rs, rule{fmt.Sprintf("z w%.1f", w), lex, weighted2(fixed(w), normZ, normZ)})
		rs = append(rs, rule{fmt.Sprintf("minmax w%.1f", w), lex, weighted2(fixed(w), normMinMax, normMinMax)})
	}
	return rs
}
