package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/engramdb/engram/memory"
)

// metrics are the service's Prometheus metrics: request latency by route and
// status, and store gauges read when scraped.
type metrics struct {
	latency *prometheus.HistogramVec
}

func newMetrics(reg *prometheus.Registry, store *memory.Store) (*metrics, error) {
	m := &metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "engram",
			Name:      "http_request_duration_seconds",
			Help:      "Latency of HTTP requests by route and status code.",
			// 100 µs to ~13 s: recall is sub-millisecond, embedding-heavy writes are not.
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"route", "code"}),
	}
	memories := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "engram",
		Name:      "memories",
		Help:      "Number of long-term memories in the store.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n, err := store.Count(ctx, nil)
		if err != nil {
			return -1
		}
		return float64(n)
	})
	for _, c := range []prometheus.Collector{m.latency, memories, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.latency.WithLabelValues(route, strconv.Itoa(status)).Observe(d.Seconds())
}

func (m *metrics) handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
