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
			Help:      "Latency of HTTP requests by route, status code and key name (never the key itself).",
			// 100 µs to ~13 s: recall is sub-millisecond, embedding-heavy writes are not.
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"route", "code", "key"}),
	}
	storeStats := &storeCollector{store: store}
	for _, c := range []prometheus.Collector{m.latency, storeStats, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(route, key string, status int, d time.Duration) {
	m.latency.WithLabelValues(route, strconv.Itoa(status), key).Observe(d.Seconds())
}

func (m *metrics) handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// storeCollector reports the store's figures when scraped.
type storeCollector struct{ store *memory.Store }

var storeGauges = []struct {
	desc *prometheus.Desc
	get  func(memory.Stats) float64
}{
	{prometheus.NewDesc("engram_memories", "Long-term memories in the store.", nil, nil), func(s memory.Stats) float64 { return float64(s.Memories) }},
	{prometheus.NewDesc("engram_sessions", "Sessions with at least one memory.", nil, nil), func(s memory.Stats) float64 { return float64(s.Sessions) }},
	{prometheus.NewDesc("engram_archived_memories", "Memories in the cold archive.", nil, nil), func(s memory.Stats) float64 { return float64(s.Archived) }},
	{prometheus.NewDesc("engram_tasks", "Working-memory tasks.", nil, nil), func(s memory.Stats) float64 { return float64(s.Tasks) }},
	{prometheus.NewDesc("engram_disk_bytes", "Bytes the store occupies on disk.", nil, nil), func(s memory.Stats) float64 { return float64(s.Backend.DiskBytes) }},
	{prometheus.NewDesc("engram_segments", "Immutable segment files.", nil, nil), func(s memory.Stats) float64 { return float64(s.Backend.Segments) }},
	{prometheus.NewDesc("engram_wal_bytes", "Bytes in the write-ahead log.", nil, nil), func(s memory.Stats) float64 { return float64(s.Backend.WALBytes) }},
	{prometheus.NewDesc("engram_memory_bytes", "Bytes the store keeps in memory.", nil, nil), func(s memory.Stats) float64 { return float64(s.Backend.MemBytes) }},
}

// touchFailures is read without Stats (which scans the store), so it is
// reported even while the store cannot be scanned.
var touchFailures = prometheus.NewDesc("engram_touch_failures_total",
	"Recalls that answered but could not record their access statistics (a full disk, say).", nil, nil)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range storeGauges {
		ch <- g.desc
	}
	ch <- touchFailures
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(touchFailures, prometheus.CounterValue, float64(c.store.TouchFailures()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.store.Stats(ctx)
	if err != nil {
		for _, g := range storeGauges {
			ch <- prometheus.NewInvalidMetric(g.desc, err)
		}
		return
	}
	for _, g := range storeGauges {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.get(st))
	}
}
