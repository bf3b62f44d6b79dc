package plugin

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quiverdata/quiver/pkg/arrowipc"
)

// Prometheus metrics, served with the SDK's diagnostics (Grafana scrapes
// them at /api/plugins/quiver-arrow-datasource/metrics). Labelled by codec
// as "zstd/3", "lz4/0" or "none".
var (
	metricFrames = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "quiver", Name: "frames_total",
		Help: "Frames encoded, by codec.",
	}, []string{"codec"})
	metricRawBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "quiver", Name: "body_raw_bytes_total",
		Help: "Bytes of frame body buffers before compression, by codec.",
	}, []string{"codec"})
	metricWireBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "quiver", Name: "body_wire_bytes_total",
		Help: "Bytes of frame body buffers as sent, by codec.",
	}, []string{"codec"})
	metricFrameBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "quiver", Name: "frame_bytes_total",
		Help: "Bytes of whole encoded frames (schema, bodies, footer), by codec.",
	}, []string{"codec"})
	metricEncodeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "quiver", Name: "encode_seconds",
		Help:    "Time to encode one frame, by codec.",
		Buckets: prometheus.ExponentialBuckets(5e-6, 4, 10), // 5 µs .. 1.3 s
	}, []string{"codec"})
)

func init() {
	prometheus.MustRegister(metricFrames, metricRawBytes, metricWireBytes, metricFrameBytes, metricEncodeSeconds)
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
