package beir

import (
	"math"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestMetricsHandComputed(t *testing.T) {
	rel := map[string]int{"a": 3, "b": 2, "c": 1, "d": 0}
	ranked := []string{"d", "a", "c"}
	// DCG = 3/log2(3) + 1/log2(4) = 2.392789; IDCG = 3 + 2/log2(3) + 1/2 = 4.761860.
	cases := []struct {
		name      string
		got, want float64
	}{
		{"ndcg@10", NDCG(ranked, rel, 10), 0.5024905},
		{"ndcg@1", NDCG(ranked, rel, 1), 0},
		{"ndcg@2", NDCG(ranked, rel, 2), (3 / math.Log2(3)) / (3 + 2/math.Log2(3))},
		{"recall@2", Recall(ranked, rel, 2), 1.0 / 3},
		{"recall@5", Recall(ranked, rel, 5), 2.0 / 3},
		{"mrr@10", MRR(ranked, rel, 10), 0.5},
		{"mrr@1", MRR(ranked, rel, 1), 0},
		// Negative grades are "not relevant": only y counts. 2/log2(3) / 2.
		{"ndcg negative grade", NDCG([]string{"x", "y"}, map[string]int{"x": -1, "y": 2}, 10), 0.6309298},
		{"perfect", NDCG([]string{"a", "b", "c"}, rel, 10), 1},
		{"duplicate ranked once", Recall([]string{"a", "a", "a"}, rel, 10), 1.0 / 3},
		{"no relevant", NDCG([]string{"d"}, map[string]int{"d": 0}, 10), 0},
		{"empty run", Recall(nil, rel, 10), 0},
	}
	for _, c := range cases {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestEvaluate(t *testing.T) {
	qrels := Qrels{
		"q1":    {"a": 1},
		"q2":    {"b": 2, "c": 1},
		"qnone": {"z": 0, "y": -1}, // no relevant document: not averaged
	}
	run := map[string][]string{
		"q1": {"a"},      // ndcg 1, r5 1, mrr 1
		"q2": {"x", "c"}, // ndcg (1/log2 3)/(2+1/log2 3), r5 1/2, mrr 1/2
	}
	m := Evaluate(run, qrels)
	if m.Queries != 2 {
		t.Fatalf("queries %d, want 2", m.Queries)
	}
	n2 := (1 / math.Log2(3)) / (2 + 1/math.Log2(3))
	if !near(m.NDCG10, (1+n2)/2) || !near(m.Recall5, 0.75) || !near(m.Recall10, 0.75) || !near(m.MRR10, 0.75) {
		t.Fatalf("%+v", m)
	}
	if m := Evaluate(nil, qrels); m.Queries != 2 || m.NDCG10 != 0 {
		t.Fatalf("empty run: %+v", m)
	}
}

func TestPercentile(t *testing.T) {
	r := &Run{Latencies: []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}}
	if got := r.Percentile(50); got != 5 {
		t.Errorf("p50 = %v, want 5", got)
	}
	if got := r.Percentile(99); got != 10 {
		t.Errorf("p99 = %v, want 10", got)
	}
	if got := (&Run{}).CPUPercentile(50); got != 0 {
		t.Errorf("empty: %v", got)
	}
}
