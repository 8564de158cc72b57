package server

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/engramdb/engram/memory"
)

// SeriesPoint is one sample of the service's time series: the memory count
// at T, and the recalls answered since the previous point with their latency
// (median, 95th percentile and maximum, in milliseconds; 0 without recalls).
type SeriesPoint struct {
	T        time.Time `json:"t"`
	Memories int       `json:"memories"`
	Recalls  int       `json:"recalls"`
	P50Ms    float64   `json:"recall_p50_ms"`
	P95Ms    float64   `json:"recall_p95_ms"`
	MaxMs    float64   `json:"recall_max_ms"`
}

// maxPending bounds the recall latencies kept between two samples; past it,
// the older half is dropped (the quantiles then describe the later recalls;
// the count stays exact).
const maxPending = 1 << 14

// series keeps a small in-memory time series for the dashboard's plots:
// memory growth and recall latency. It lives as long as the process (a
// restart starts it afresh); /metrics is the place for long-term records.
type series struct {
	store *memory.Store
	every time.Duration
	keep  int

	mu      sync.Mutex
	points  []SeriesPoint
	pending []time.Duration
	recalls int // since the last point
}

func newSeries(store *memory.Store, every time.Duration, keep int) *series {
	if every <= 0 {
		every = DefaultSampleEvery
	}
	if keep <= 0 {
		keep = DefaultSamplesKept
	}
	return &series{store: store, every: every, keep: keep}
}

// observeRecall records one recall's latency.
func (s *series) observeRecall(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recalls++
	if len(s.pending) >= maxPending {
		s.pending = s.pending[:copy(s.pending, s.pending[len(s.pending)/2:])]
	}
	s.pending = append(s.pending, d)
}

// run samples until ctx ends, the first point at once.
func (s *series) run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *series) sample(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	n, err := s.store.Count(cctx, nil)
	cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := SeriesPoint{T: time.Now().UTC(), Memories: n, Recalls: s.recalls}
	s.recalls = 0
	if err != nil && len(s.points) > 0 {
		p.Memories = s.points[len(s.points)-1].Memories
	}
	if len(s.pending) > 0 {
		slices.Sort(s.pending)
		q := func(f float64) float64 {
			return float64(s.pending[int(f*float64(len(s.pending)-1))].Microseconds()) / 1000
		}
		p.P50Ms, p.P95Ms, p.MaxMs = q(0.5), q(0.95), q(1)
		s.pending = s.pending[:0]
	}
	s.points = append(s.points, p)
	if len(s.points) > s.keep {
		s.points = s.points[:copy(s.points, s.points[len(s.points)-s.keep:])]
	}
}

func (s *series) snapshot() []SeriesPoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.points)
}

func (h *Handler) adminSeries(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{
		"interval_seconds": h.series.every.Seconds(),
		"points":           h.series.snapshot(),
	})
	return nil
}
