package exec

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// batchBounds returns the upper bounds of the batch duration's buckets,
// in the metrics and in Status.BatchSeconds: 50µs to 6.5s, doubling.
func batchBounds() []float64 { return prometheus.ExponentialBuckets(50e-6, 2, 18) }

// bucket returns the index in a histogram with bounds of the bucket v
// falls in: the first bound at least v, or len(bounds) past them all.
func bucket(bounds []float64, v float64) int {
	i, _ := slices.BinarySearch(bounds, v)
	return i
}

// Metrics are a job's Prometheus metrics, in a registry of their own (no
// global state: two jobs in one process do not collide).
type Metrics struct {
	Registry *prometheus.Registry

	batches       prometheus.Counter
	commits       prometheus.Counter
	batchSeconds  prometheus.Histogram
	outputs       prometheus.Counter
	dead          prometheus.Counter
	sourceRecords *prometheus.CounterVec
	opIn          *prometheus.CounterVec
	opOut         *prometheus.CounterVec
	opDead        *prometheus.CounterVec
	opLate        *prometheus.CounterVec
	windowsFired  *prometheus.CounterVec
	windowsOpen   *prometheus.GaugeVec
	watermarkLag  *prometheus.GaugeVec
	txnOutcomes   *prometheus.CounterVec
	txnReExec     *prometheus.CounterVec
	txnFailed     *prometheus.CounterVec
	txnSeconds    *prometheus.CounterVec
	txnBatch      *prometheus.HistogramVec
	txnStrategy   *prometheus.CounterVec
	txnSwitches   *prometheus.CounterVec
	txnMispredict *prometheus.CounterVec
	txnDecide     *prometheus.CounterVec
	txnDeps       *prometheus.GaugeVec
	txnShape      *prometheus.GaugeVec
	swaps         *prometheus.CounterVec
	rollbacks     *prometheus.CounterVec
	retries       *prometheus.CounterVec
	quarantines   *prometheus.CounterVec
	quarantined   *prometheus.GaugeVec
	workerRecords *prometheus.CounterVec
	workerBusy    *prometheus.CounterVec
}

type opMetrics struct {
	in, out, dead prometheus.Counter
	// A windowed operator's records that came late and windows fired.
	late, fired prometheus.Counter
	open        prometheus.Gauge

	// The plugin's lifecycle and failure policy.
	swaps, rollbacks, retries, quarantines prometheus.Counter
	quarantined                            prometheus.Gauge

	workers *workerMetrics
}

// workerMetrics are the per-worker series of one operator.
type workerMetrics struct {
	operator      string
	records, busy *prometheus.CounterVec
	// seen is each worker's totals already added to the counters.
	seen map[int]workerTotals
}

type workerTotals struct {
	records uint64
	busy    float64
	// The worker's series, looked up once.
	recordsSeries, busySeries prometheus.Counter
}

// observe adds what w did since the last observation to its series.
func (wm *workerMetrics) observe(w *worker) {
	if wm == nil {
		return
	}
	id := w.id
	s, ok := wm.seen[id]
	if !ok {
		label := strconv.Itoa(id)
		s.recordsSeries = wm.records.WithLabelValues(wm.operator, label)
		s.busySeries = wm.busy.WithLabelValues(wm.operator, label)
	}
	busy := w.busy.Seconds()
	s.recordsSeries.Add(float64(w.records - s.records))
	s.busySeries.Add(busy - s.busy)
	s.records, s.busy = w.records, busy
	wm.seen[id] = s
}

// drop removes a worker's series when the worker goes away.
func (wm *workerMetrics) drop(id int) {
	if wm == nil {
		return
	}
	label := strconv.Itoa(id)
	wm.records.DeleteLabelValues(wm.operator, label)
	wm.busy.DeleteLabelValues(wm.operator, label)
	delete(wm.seen, id)
}

// txnMetrics are a transactional operator's series.
type txnMetrics struct {
	txnCommitted, txnAborted, txnReExec, txnFailed                prometheus.Counter
	txnPlan, txnExplore, txnUseful, txnAbort, txnFinish, txnGuest prometheus.Counter
	txnBatch                                                      prometheus.Observer
	txnStrategy                                                   *prometheus.CounterVec // curried with the operator
	txnSwitches, txnMispredict, txnDecide                         prometheus.Counter
	txnTemporal, txnParametric, txnLogical, txnNonDet             prometheus.Gauge
	txnSkew, txnAbortRatio, txnCyclic, txnOpCost, txnRate         prometheus.Gauge
}

// NewMetrics makes a job's metrics and registers them, with the Go runtime
// and process collectors, in a new registry.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_batches_total", Help: "Batches processed, written to the sinks and committed (with a later batch under state.commit_interval)."}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_commits_total", Help: "Commits of state with the source positions and sink offsets: one a batch, or fewer under state.commit_interval."}),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_batch_duration_seconds",
			Help:    "Time to process, write, commit (if due) and acknowledge one batch.",
			Buckets: batchBounds()}),
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
		txnOutcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_txn_transactions_total", Help: "Transactions of each transactional operator, by outcome (committed, aborted)."},
			[]string{"operator", "outcome"}),
		txnReExec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_txn_reexecutions_total", Help: "Operations a transactional operator's scheduler executed again after an abort."}, []string{"operator"}),
		txnFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_txn_failed_batches_total", Help: "Batches a transactional operator failed on (dead-lettered or stopping the job)."}, []string{"operator"}),
		txnSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_txn_seconds_total",
			Help: "Time of a transactional operator's batches by phase, summed over its workers: plan (TPG), explore (scheduling), useful (operation functions), abort (re-execution passes), finish (change set), guest (plan and post calls)."},
			[]string{"operator", "phase"}),
		txnBatch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_txn_batch_duration_seconds",
			Help:    "Time for a transactional operator to plan, schedule and post one batch.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18)}, []string{"operator"}),
	}
	m.txnStrategy = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_txn_strategy_batches_total", Help: "Batches a transactional operator ran, by the strategy that ran them (the adaptive strategy's choice)."},
		[]string{"operator", "strategy"})
	m.txnSwitches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_txn_adaptive_switches_total", Help: "Times the adaptive strategy changed the strategy of the next batch."}, []string{"operator"})
	m.txnMispredict = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_txn_adaptive_mispredictions_total", Help: "Batches after a switch that ran slower than the adaptive strategy predicted."}, []string{"operator"})
	m.txnDecide = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_txn_adaptive_decide_seconds_total", Help: "Time the adaptive strategy spent deciding."}, []string{"operator"})
	m.txnDeps = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_txn_batch_dependencies_per_operation", Help: "Dependencies per operation in the last batch's TPG, by kind (temporal, parametric, logical, nondet)."},
		[]string{"operator", "kind"})
	m.txnShape = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_txn_batch_measure", Help: "What the last batch measured, the adaptive strategy's inputs: skew, abort_ratio, cyclic_chains (share in cycles; counted under adaptive), op_cost_seconds, events_per_second."},
		[]string{"operator", "measure"})
	m.swaps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_operator_swaps_total", Help: "Plugin swaps made on each operator."}, []string{"operator"})
	m.rollbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_operator_rollbacks_total", Help: "Automatic rollbacks of a swapped-in plugin that failed in its trial."}, []string{"operator"})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_operator_retries_total", Help: "Runs of a failed record again, alone (the retries policy)."}, []string{"operator"})
	m.quarantines = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_operator_quarantines_total", Help: "Times an operator was quarantined for failing batch after batch."}, []string{"operator"})
	m.quarantined = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_operator_quarantined", Help: "1 while the operator is quarantined, waiting for a swap; alert on it."}, []string{"operator"})
	m.workerRecords = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_worker_records_total", Help: "Records each worker of a stateless or keyed operator ran."}, []string{"operator", "worker"})
	m.workerBusy = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_worker_busy_seconds_total", Help: "Time each worker of a stateless or keyed operator spent running its records (not waiting for the batch's other workers): a straggler shows as more seconds per record than its peers."},
		[]string{"operator", "worker"})
	m.opLate = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_operator_late_records_total", Help: "Records a windowed operator received after their windows closed, sent to the late destination."}, []string{"operator"})
	m.windowsFired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_window_firings_total", Help: "Windows a windowed operator fired (each firing once, early and late firings included)."}, []string{"operator"})
	m.watermarkLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_source_watermark_lag_seconds", Help: "How far each source's watermark is behind the host's clock, after the last batch."}, []string{"source"})
	m.windowsOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_window_open_slices", Help: "Slices (panes) of open windows a windowed operator keeps in its state, after the last batch."}, []string{"operator"})
	r.MustRegister(m.opLate, m.windowsFired, m.watermarkLag, m.windowsOpen)
	r.MustRegister(m.swaps, m.rollbacks, m.retries, m.quarantines, m.quarantined, m.workerRecords, m.workerBusy)
	r.MustRegister(m.batches, m.commits, m.batchSeconds, m.outputs, m.dead, m.sourceRecords, m.opIn, m.opOut,
		m.opDead, m.txnOutcomes, m.txnReExec, m.txnFailed, m.txnSeconds, m.txnBatch,
		m.txnStrategy, m.txnSwitches, m.txnMispredict, m.txnDecide, m.txnDeps, m.txnShape,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// operator makes an operator's series.
func (m *Metrics) operator(name string) *opMetrics {
	om := &opMetrics{in: m.opIn.WithLabelValues(name), out: m.opOut.WithLabelValues(name), dead: m.opDead.WithLabelValues(name),
		late: m.opLate.WithLabelValues(name), fired: m.windowsFired.WithLabelValues(name), open: m.windowsOpen.WithLabelValues(name),
		swaps: m.swaps.WithLabelValues(name), rollbacks: m.rollbacks.WithLabelValues(name), retries: m.retries.WithLabelValues(name),
		quarantines: m.quarantines.WithLabelValues(name), quarantined: m.quarantined.WithLabelValues(name),
		workers: &workerMetrics{operator: name, records: m.workerRecords, busy: m.workerBusy, seen: map[int]workerTotals{}}}
	om.quarantined.Set(0)
	return om
}

// txnOperator makes a transactional operator's series.
func (m *Metrics) txnOperator(name string) *txnMetrics {
	om := &txnMetrics{}
	{
		om.txnCommitted = m.txnOutcomes.WithLabelValues(name, "committed")
		om.txnAborted = m.txnOutcomes.WithLabelValues(name, "aborted")
		om.txnReExec = m.txnReExec.WithLabelValues(name)
		om.txnFailed = m.txnFailed.WithLabelValues(name)
		om.txnPlan = m.txnSeconds.WithLabelValues(name, "plan")
		om.txnExplore = m.txnSeconds.WithLabelValues(name, "explore")
		om.txnUseful = m.txnSeconds.WithLabelValues(name, "useful")
		om.txnAbort = m.txnSeconds.WithLabelValues(name, "abort")
		om.txnFinish = m.txnSeconds.WithLabelValues(name, "finish")
		om.txnGuest = m.txnSeconds.WithLabelValues(name, "guest")
		om.txnBatch = m.txnBatch.WithLabelValues(name)
		om.txnStrategy = m.txnStrategy.MustCurryWith(prometheus.Labels{"operator": name})
		om.txnSwitches = m.txnSwitches.WithLabelValues(name)
		om.txnMispredict = m.txnMispredict.WithLabelValues(name)
		om.txnDecide = m.txnDecide.WithLabelValues(name)
		om.txnTemporal = m.txnDeps.WithLabelValues(name, "temporal")
		om.txnParametric = m.txnDeps.WithLabelValues(name, "parametric")
		om.txnLogical = m.txnDeps.WithLabelValues(name, "logical")
		om.txnNonDet = m.txnDeps.WithLabelValues(name, "nondet")
		om.txnSkew = m.txnShape.WithLabelValues(name, "skew")
		om.txnAbortRatio = m.txnShape.WithLabelValues(name, "abort_ratio")
		om.txnCyclic = m.txnShape.WithLabelValues(name, "cyclic_chains")
		om.txnOpCost = m.txnShape.WithLabelValues(name, "op_cost_seconds")
		om.txnRate = m.txnShape.WithLabelValues(name, "events_per_second")
	}
	return om
}
