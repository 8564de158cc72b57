package main

import (
	"fmt"
	"testing"
)

// TestFusionGateRRF measures the vector gate under reciprocal rank fusion (memory.FusionRRF):
// the vector term of a memory scaled by the same gate factor as in weighted fusion.
func TestFusionGateRRF(t *testing.T) {
	sets := sweepLists(t)
	lex := func(q *qlists) ([]scored, []scored) { return q.KW, q.Vec }
	rrf := func(wv, g float64) fuseFn {
		return func(kw, vec []scored) []string {
			nk := normMax(kw)
			sc := map[string]float64{}
			for i, s := range kw {
				sc[s.ID] += (1 - wv) / (60 + float64(i+1))
			}
			for i, s := range vec {
				f := 1.0
				if g > 0 && len(kw) > 0 {
					f = max(0, min(1, (nk[s.ID]-g)/(1-g)))
				}
				sc[s.ID] += f * wv / (60 + float64(i+1))
			}
			return top10(sc)
		}
	}
	for _, c := range [][2]float64{{0.3, 0}, {0.5, 0}, {0.3, 0.8}, {0.5, 0.8}} {
		f := rrf(c[0], c[1])
		line := fmt.Sprintf("rrf wv %.1f gate %.1f:", c[0], c[1])
		for _, sl := range sets {
			line += fmt.Sprintf(" %s %.4f", sl.Name, evalSet(sl, lex, f, nil))
		}
		t.Log(line)
	}
}
