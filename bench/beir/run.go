package beir

import (
	"runtime"
	"slices"
	"time"
)

// Run holds a retriever's ranked answers and per-query latencies.
type Run struct {
	Ranked    map[string][]string // query ID -> document IDs, best first
	Latencies []time.Duration     // wall time, one per judged query, in query order
	CPU       []time.Duration     // the calling thread's CPU time per query (empty where unavailable)
}

// RunQueries calls search for every judged query of ds (single-threaded, so
// the latencies are those of one caller) and records the answers.
func RunQueries(ds *Dataset, search func(Query) ([]string, error)) (*Run, error) {
	judged := ds.Judged()
	r := &Run{Ranked: make(map[string][]string, len(judged)), Latencies: make([]time.Duration, 0, len(judged))}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, q := range judged {
		start, startCPU := time.Now(), threadCPU()
		ids, err := search(q)
		r.Latencies = append(r.Latencies, time.Since(start))
		if startCPU > 0 {
			r.CPU = append(r.CPU, threadCPU()-startCPU)
		}
		if err != nil {
			return nil, err
		}
		r.Ranked[q.ID] = ids
	}
	return r, nil
}

// Percentile returns the p-th percentile (0..100, nearest rank) of the
// wall-clock latencies, or 0 when there are none.
func (r *Run) Percentile(p float64) time.Duration { return percentile(r.Latencies, p) }

// CPUPercentile is Percentile over the per-query CPU times.
func (r *Run) CPUPercentile(p float64) time.Duration { return percentile(r.CPU, p) }

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
