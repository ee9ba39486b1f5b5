// Package metrics exposes glassbox's pipeline as Prometheus metrics:
// per-stage duration histograms, tokens per second, queue depth, running
// jobs, job outcomes and resident memory. A *Metrics is a pipeline.Sink:
// give it to the job manager and mount Handler at /metrics.
//
// Metric names (all prefixed glassbox_):
//
//	stage_duration_seconds{stage}      histogram of each stage's wall time
//	tokens_per_second{stage}           histogram of prefill/generate speed per job
//	tokens_total{stage}                tokens processed (prefill) or generated
//	tokens_cached_total{stage}         prompt tokens a KV cache held (prompt caching), not processed
//	jobs_total{state}                  jobs ended, by done/failed/cancelled
//	errors_total{stage}                failed jobs by the stage that failed
//	queue_depth                        jobs waiting in the queue now
//	jobs_running                       jobs running now
//	model_resident_bytes{model}        memory held by each loaded model (set by the scheduler)
//	journal_*                          the journal writer's counters (WatchJournal)
//
// plus the standard process_* (process_resident_memory_bytes) and go_*
// collectors.
//
// Imports: api and the Prometheus client.
package metrics

import (
	"net/http"
	"sync"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the collectors and their registry. Its methods are safe for
// concurrent use.
type Metrics struct {
	Registry *prometheus.Registry

	StageDuration *prometheus.HistogramVec
	TokensPerSec  *prometheus.HistogramVec
	Tokens        *prometheus.CounterVec
	TokensCached  *prometheus.CounterVec
	Jobs          *prometheus.CounterVec
	Errors        *prometheus.CounterVec
	QueueDepth    prometheus.Gauge
	Running       prometheus.Gauge
	ModelResident *prometheus.GaugeVec

	mu       sync.Mutex
	queued   map[string]bool   // jobs waiting now
	running  map[string]bool   // jobs running now
	failedIn map[string]string // job → stage of its error event
}

// New returns metrics registered in a fresh registry, with the process
// and Go runtime collectors.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		StageDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "glassbox_stage_duration_seconds", Help: "Wall time of each pipeline stage.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 11), // 0.5 ms … ~9 min
		}, []string{"stage"}),
		TokensPerSec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "glassbox_tokens_per_second", Help: "Speed of prefill and generation, one observation per job.",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 16), // 0.5 … 16k tokens/s
		}, []string{"stage"}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "glassbox_tokens_total", Help: "Tokens read (prefill) and generated.",
		}, []string{"stage"}),
		TokensCached: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "glassbox_tokens_cached_total", Help: "Prompt tokens whose KV cache an earlier request left (prompt caching): not read again.",
		}, []string{"stage"}),
		Jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "glassbox_jobs_total", Help: "Jobs ended, by final state.",
		}, []string{"state"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "glassbox_errors_total", Help: "Failed jobs, by the stage that failed.",
		}, []string{"stage"}),
		QueueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "glassbox_queue_depth", Help: "Jobs waiting in the queue.",
		}),
		Running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "glassbox_jobs_running", Help: "Jobs running (past the queue, not ended).",
		}),
		ModelResident: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "glassbox_model_resident_bytes", Help: "Memory held by each loaded model.",
		}, []string{"model"}),
		queued:   map[string]bool{},
		running:  map[string]bool{},
		failedIn: map[string]string{},
	}
	m.Registry.MustRegister(m.StageDuration, m.TokensPerSec, m.Tokens, m.TokensCached, m.Jobs, m.Errors, m.QueueDepth,
		m.Running, m.ModelResident,
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// SetModelResident records the memory a loaded model holds; 0 removes it.
func (m *Metrics) SetModelResident(model string, bytes int64) {
	if bytes <= 0 {
		m.ModelResident.DeleteLabelValues(model)
		return
	}
	m.ModelResident.WithLabelValues(model).Set(float64(bytes))
}

// JobUpdated is part of pipeline.Sink; the events carry all it needs.
func (m *Metrics) JobUpdated(api.Job) {}

// EventAppended updates the metrics from one job event (pipeline.Sink).
func (m *Metrics) EventAppended(ev api.Event) {
	switch ev.Type {
	case api.TypeStageDone:
		sec := ev.DurationMS / 1000
		m.StageDuration.WithLabelValues(ev.Stage).Observe(sec)
		if ev.Stage == "queued" {
			m.setQueued(ev.Job, false)
		}
		if st := ev.Stats; st != nil && st.Items > 0 && st.Unit == "tokens" &&
			(ev.Stage == "prefill" || ev.Stage == "generate") {
			m.Tokens.WithLabelValues(ev.Stage).Add(float64(st.Items))
			if st.Cached > 0 {
				m.TokensCached.WithLabelValues(ev.Stage).Add(float64(st.Cached))
			}
			if r := st.Rate(ev.Stage, sec); r > 0 {
				m.TokensPerSec.WithLabelValues(ev.Stage).Observe(r)
			}
		}
	case api.TypeStageStart:
		if ev.Stage == "queued" {
			m.setQueued(ev.Job, true)
		}
	case api.TypeStageSkipped:
		if ev.Stage == "queued" {
			m.setQueued(ev.Job, false)
		}
	case api.TypeError:
		m.mu.Lock()
		m.failedIn[ev.Job] = ev.Stage // counted if the job ends failed, not cancelled
		m.mu.Unlock()
	case api.TypeState:
		m.onState(ev)
	}
}

func (m *Metrics) onState(ev api.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch ev.State {
	case api.StateQueued:
		m.queued[ev.Job] = true
	case api.StateRunning:
		delete(m.queued, ev.Job)
		m.running[ev.Job] = true
	default:
		delete(m.queued, ev.Job)
		delete(m.running, ev.Job)
		m.Jobs.WithLabelValues(ev.State).Inc()
		if stage, ok := m.failedIn[ev.Job]; ok && ev.State == api.StateFailed {
			m.Errors.WithLabelValues(stage).Inc()
		}
		delete(m.failedIn, ev.Job)
	}
	m.QueueDepth.Set(float64(len(m.queued)))
	m.Running.Set(float64(len(m.running) - m.waiting()))
}

// waiting counts jobs that are both running (started) and queued (waiting
// for a slot inside their work): they count as queued, not running.
func (m *Metrics) waiting() int {
	n := 0
	for id := range m.queued {
		if m.running[id] {
			n++
		}
	}
	return n
}

func (m *Metrics) setQueued(job string, q bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q {
		m.queued[job] = true
	} else {
		delete(m.queued, job)
	}
	m.QueueDepth.Set(float64(len(m.queued)))
	m.Running.Set(float64(len(m.running) - m.waiting()))
}
