package exec

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are a job's Prometheus metrics, in a registry of their own (no
// global state: two jobs in one process do not collide).
type Metrics struct {
	Registry *prometheus.Registry

	batches       prometheus.Counter
	batchSeconds  prometheus.Histogram
	outputs       prometheus.Counter
	dead          prometheus.Counter
	sourceRecords *prometheus.CounterVec
	opIn          *prometheus.CounterVec
	opOut         *prometheus.CounterVec
	opDead        *prometheus.CounterVec
	ops           []opMetrics
}

type opMetrics struct {
	in, out, dead prometheus.Counter
}

// NewMetrics makes a job's metrics and registers them, with the Go runtime
// and process collectors, in a new registry.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_batches_total", Help: "Batches processed and committed."}),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_batch_duration_seconds",
			Help:    "Time to process, write, commit and acknowledge one batch.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18)}),
		outputs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_sink_records_total", Help: "Records written to the sinks (each sink receives every one)."}),
		dead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_dead_letters_total", Help: "Records sent to the dead-letter destination."}),
		sourceRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_source_records_total", Help: "Records read, per source."}, []string{"source"}),
		opIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_operator_records_in_total", Help: "Records into each operator."}, []string{"operator"}),
		opOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_operator_records_out_total", Help: "Records out of each operator."}, []string{"operator"}),
		opDead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_operator_dead_letters_total", Help: "Records each operator failed on, sent to the dead letters."}, []string{"operator"}),
	}
	r.MustRegister(m.batches, m.batchSeconds, m.outputs, m.dead, m.sourceRecords, m.opIn, m.opOut,
		m.opDead,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) addOperator(name string) {
	m.ops = append(m.ops, opMetrics{in: m.opIn.WithLabelValues(name), out: m.opOut.WithLabelValues(name), dead: m.opDead.WithLabelValues(name)})
}
