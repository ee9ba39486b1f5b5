package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// JournalStats are the journal writer's counters (journal.Stats), passed
// in by the caller so this package need not import the journal.
type JournalStats struct {
	Events, Batches, Errors int64
	Busy                    time.Duration
}

// WatchJournal exports the journal writer's counters, read from stats at
// each scrape:
//
//	glassbox_journal_events_written_total, glassbox_journal_batches_total,
//	glassbox_journal_write_errors_total, glassbox_journal_write_seconds_total
//
// Call it once.
func (m *Metrics) WatchJournal(stats func() JournalStats) {
	counter := func(name, help string, v func(JournalStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return v(stats()) })
	}
	m.Registry.MustRegister(
		counter("glassbox_journal_events_written_total", "Job events written to the journal.",
			func(s JournalStats) float64 { return float64(s.Events) }),
		counter("glassbox_journal_batches_total", "Journal write transactions committed.",
			func(s JournalStats) float64 { return float64(s.Batches) }),
		counter("glassbox_journal_write_errors_total", "Journal batches that failed to write (their events are lost).",
			func(s JournalStats) float64 { return float64(s.Errors) }),
		counter("glassbox_journal_write_seconds_total", "Time the journal writer spent writing.",
			func(s JournalStats) float64 { return s.Busy.Seconds() }),
	)
}
