package beir

import (
	"math"
	"slices"
)

// NDCG returns nDCG@k of ranked (document IDs, best first) against the
// graded judgments rel, with trec_eval's linear gain: DCG = Σ grade_i /
// log2(i+1) over ranks i = 1..k, grades <= 0 counting 0, divided by the DCG
// of the ideal ordering of the judged grades. It is 0 when no judged
// document has a positive grade. A document ranked twice counts once.
func NDCG(ranked []string, rel map[string]int, k int) float64 {
	var dcg float64
	seen := map[string]bool{}
	for i, id := range ranked[:min(k, len(ranked))] {
		if g := rel[id]; g > 0 && !seen[id] {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
		seen[id] = true
	}
	grades := make([]int, 0, len(rel))
	for _, g := range rel {
		if g > 0 {
			grades = append(grades, g)
		}
	}
	slices.SortFunc(grades, func(a, b int) int { return b - a })
	var idcg float64
	for i, g := range grades[:min(k, len(grades))] {
		idcg += float64(g) / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

// Recall returns recall@k: the fraction of the relevant (grade > 0)
// documents found in the first k of ranked (BEIR's definition: divided by
// the number of relevant documents, not by min(k, that number)).
func Recall(ranked []string, rel map[string]int, k int) float64 {
	relevant := 0
	for _, g := range rel {
		if g > 0 {
			relevant++
		}
	}
	if relevant == 0 {
		return 0
	}
	found := 0
	seen := map[string]bool{}
	for _, id := range ranked[:min(k, len(ranked))] {
		if rel[id] > 0 && !seen[id] {
			found++
		}
		seen[id] = true
	}
	return float64(found) / float64(relevant)
}

// MRR returns the reciprocal rank of the first relevant document within the
// first k of ranked, or 0.
func MRR(ranked []string, rel map[string]int, k int) float64 {
	for i, id := range ranked[:min(k, len(ranked))] {
		if rel[id] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// Metrics are the means over the judged queries.
type Metrics struct {
	NDCG10   float64 `json:"ndcg10"`
	Recall5  float64 `json:"recall5"`
	Recall10 float64 `json:"recall10"`
	MRR10    float64 `json:"mrr10"`
	Queries  int     `json:"queries"`
}

// Evaluate averages the metrics over every query of qrels with at least one
// relevant document; run maps query IDs to ranked document IDs, and a judged
// query missing from run scores 0.
func Evaluate(run map[string][]string, qrels Qrels) Metrics {
	var m Metrics
	for q, rel := range qrels {
		if !hasRelevant(rel) {
			continue
		}
		ranked := run[q]
		m.NDCG10 += NDCG(ranked, rel, 10)
		m.Recall5 += Recall(ranked, rel, 5)
		m.Recall10 += Recall(ranked, rel, 10)
		m.MRR10 += MRR(ranked, rel, 10)
		m.Queries++
	}
	if m.Queries > 0 {
		n := float64(m.Queries)
		m.NDCG10, m.Recall5, m.Recall10, m.MRR10 = m.NDCG10/n, m.Recall5/n, m.Recall10/n, m.MRR10/n
	}
	return m
}

func hasRelevant(rel map[string]int) bool {
	for _, g := range rel {
		if g > 0 {
			return true
		}
	}
	return false
}
