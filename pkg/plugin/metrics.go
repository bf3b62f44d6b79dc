package plugin

import (
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/pipeline"
	"github.com/quiverdata/quiver/pkg/source/flightsql"
)

// Prometheus metrics, served with the SDK's diagnostics (Grafana scrapes
// them at /api/plugins/quiver-arrow-datasource/metrics). Labelled by codec
// as "zstd/3", "lz4/0" or "none".
var (
	metricFrames        = counterVec("frames_total", "Frames encoded, by codec.", "codec")
	metricRawBytes      = counterVec("body_raw_bytes_total", "Bytes of frame body buffers before compression, by codec.", "codec")
	metricWireBytes     = counterVec("body_wire_bytes_total", "Bytes of frame body buffers as sent, by codec.", "codec")
	metricFrameBytes    = counterVec("frame_bytes_total", "Bytes of whole encoded frames (schema, bodies, footer), by codec.", "codec")
	metricEncodeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "quiver", Name: "encode_seconds",
		Help:    "Time to encode one frame, by codec.",
		Buckets: prometheus.ExponentialBuckets(5e-6, 4, 10), // 5 µs .. 1.3 s
	}, []string{"codec"})
)

// Metrics of the memory budget (see budget). The gauges read the budget of
// the running Service.
var (
	metricBudgetWaits      = prometheus.NewCounter(prometheus.CounterOpts(opts("memory_budget_waits_total", "Reservations of the memory budget that had to wait.")))
	metricBudgetOverdrafts = prometheus.NewCounter(prometheus.CounterOpts(opts("memory_budget_overdrafts_total", "Reservations let through over the memory budget because every request holding budget was waiting for more.")))
	metricBudgetRefused    = counterVec("memory_budget_refused_total", "Reservations of the memory budget refused, by reason: too_large (more than one share of the budget, or a request more than the whole), busy (waited too long), cancelled.", "reason")

	livePipeline atomic.Pointer[pipeline.Pipeline]

	metricUnsent = prometheus.NewGauge(prometheus.GaugeOpts(opts("chunks_unsent_bytes", "Encoded bytes of chunked responses waiting for their clients to read them.")))
)

// opts are the options of a metric of Quiver's.
func opts(name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: "quiver", Name: name, Help: help}
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts(opts(name, help)), labels)
}

func budgetGauge(name, help string, read func(used, peak, limit int64, waiting int) float64) prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts(name, help)), func() float64 {
		if p := livePipeline.Load(); p != nil {
			return read(p.Stats())
		}
		return 0
	})
}

// budgetMetrics counts what the memory budget does.
type budgetMetrics struct{}

var _ pipeline.Observer = budgetMetrics{}

func (budgetMetrics) Waited()               { metricBudgetWaits.Inc() }
func (budgetMetrics) Overdrawn()            { metricBudgetOverdrafts.Inc() }
func (budgetMetrics) Refused(reason string) { metricBudgetRefused.WithLabelValues(reason).Inc() }

// heapLive reads the runtime's live heap: the bytes the last collection
// found reachable (runtime/metrics /gc/heap/live:bytes), which, unlike
// go_memstats_heap_alloc_bytes, leaves out garbage not yet collected.
func heapLive() float64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return float64(s[0].Value.Uint64())
}

func init() {
	prometheus.MustRegister(metricFrames, metricRawBytes, metricWireBytes, metricFrameBytes, metricEncodeSeconds,
		metricBudgetWaits, metricBudgetOverdrafts, metricBudgetRefused, metricUnsent,
		metricIncremental, metricIncrementalRows, metricCacheBytes, metricCacheEvictions, metricCacheErrors,
		budgetGauge("memory_budget_bytes", "The memory budget of in-flight queries (memory_budget in [plugin.quiver-arrow-datasource]).", func(_, _, limit int64, _ int) float64 {
			return float64(limit)
		}),
		budgetGauge("memory_budget_used_bytes", "Bytes of the memory budget held: by in-flight queries (frames waiting to be encoded or sent) and by the data sources' in-memory result caches.", func(used, _, _ int64, _ int) float64 {
			return float64(used)
		}),
		budgetGauge("memory_budget_peak_bytes", "The most bytes of the memory budget held at once since the plugin started.", func(_, peak, _ int64, _ int) float64 {
			return float64(peak)
		}),
		budgetGauge("memory_budget_waiting", "Reservations of the memory budget waiting now.", func(_, _, _ int64, waiting int) float64 {
			return float64(waiting)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "quiver", Name: "go_heap_live_bytes",
			Help: "Live Go heap as of the last garbage collection (runtime/metrics /gc/heap/live:bytes).",
		}, heapLive),
	)
}

// codecMetrics are the metrics of one codec label, looked up once per
// instance rather than per frame.
type codecMetrics struct {
	frames, raw, wire, bytes prometheus.Counter
	seconds                  prometheus.Observer
}

func newCodecMetrics(label string) codecMetrics {
	return codecMetrics{
		frames:  metricFrames.WithLabelValues(label),
		raw:     metricRawBytes.WithLabelValues(label),
		wire:    metricWireBytes.WithLabelValues(label),
		bytes:   metricFrameBytes.WithLabelValues(label),
		seconds: metricEncodeSeconds.WithLabelValues(label),
	}
}

func (m codecMetrics) observe(st arrowipc.BodyStats, frameBytes int, took time.Duration) {
	m.frames.Inc()
	m.raw.Add(float64(st.RawBytes))
	m.wire.Add(float64(st.WireBytes))
	m.bytes.Add(float64(frameBytes))
	m.seconds.Observe(took.Seconds())
}

// Metrics of incremental queries and the result cache (package flightsql's
// CacheObserver).
var (
	metricIncremental     = counterVec("incremental_queries_total", "Time-series and logs queries of Flight SQL data sources, by result (incremental or full) and, for a full one, reason (off, query_off, format, sql, no_entry, backwards, too_far, schema, time_column, order, outside, limit, notice, fallback, store_error).", "result", "reason")
	metricIncrementalRows = counterVec("incremental_rows_total", "Rows of time-series and logs queries of Flight SQL data sources, by where they came from (server or cache).", "from")
	metricCacheBytes      = prometheus.NewGauge(prometheus.GaugeOpts(opts("result_cache_bytes", "Bytes of kept answers in the plugin's memory (every data source's result cache).")))
	metricCacheEvictions  = prometheus.NewCounter(prometheus.CounterOpts(opts("result_cache_evictions_total", "Kept answers evicted from the plugin's memory for room.")))
	metricCacheErrors     = counterVec("result_cache_errors_total", "Result cache operations that failed (the query was answered in full), by operation (get, put, delete).", "op")
)

// cacheMetrics counts what incremental queries and the result cache do.
type cacheMetrics struct{}

var _ flightsql.CacheObserver = cacheMetrics{}

func (cacheMetrics) Answered(reason string, fromServer, fromCache int64) {
	result := "incremental"
	if reason != "" {
		result = "full"
	}
	metricIncremental.WithLabelValues(result, reason).Inc()
	metricIncrementalRows.WithLabelValues("server").Add(float64(fromServer))
	metricIncrementalRows.WithLabelValues("cache").Add(float64(fromCache))
}

func (cacheMetrics) Stored(delta int64, evicted int) {
	metricCacheBytes.Add(float64(delta))
	metricCacheEvictions.Add(float64(evicted))
}

func (cacheMetrics) StoreFailed(op string) { metricCacheErrors.WithLabelValues(op).Inc() }
