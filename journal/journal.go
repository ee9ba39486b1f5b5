package journal

import (
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/home"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// FileName is the journal's file name inside the glassbox home.
const FileName = "journal.db"

// Errors.
var (
	ErrNotFound  = errors.New("no such job in the journal")
	ErrAmbiguous = errors.New("job id prefix matches several jobs")
	ErrClosed    = errors.New("journal is closed")
	ErrNoJournal = errors.New("no journal yet (no job has run)")
	ErrVersion   = errors.New("journal written by another glassbox version")
)

// Options configure a Journal. The zero value works.
type Options struct {
	// Retention is how many jobs are kept (newest first); default 1000,
	// negative keeps everything.
	Retention int
	// FlushInterval bounds how long an event waits in memory before it is
	// written; default 100 ms. Writes are batched within it.
	FlushInterval time.Duration
	// ReadOnly opens an existing journal for reading: no recovery, no
	// writes (the CLI's jobs/events/explain).
	ReadOnly bool
	Logger   *slog.Logger
}

// Journal is the durable job store. Its methods are safe for concurrent use.
type Journal struct {
	db   *sql.DB
	path string
	opt  Options
	log  *slog.Logger

	mu      sync.Mutex
	pending []item
	waiters []chan error
	closing bool
	wake    chan struct{} // something is pending
	urgent  chan struct{} // flush or close requested: do not wait for the interval
	stopped chan struct{} // the writer has exited

	recovered []string
	sinceTrim int
	stats     Stats
}

// Stats count the writer's work, for benchmarks and /metrics.
type Stats struct {
	Batches int64         // transactions committed
	Events  int64         // events written
	Jobs    int64         // job rows written
	Busy    time.Duration // time spent writing
	Errors  int64         // failed batches
}

// item is one queued write: a job summary or an event.
type item struct {
	job *api.Job
	ev  *api.Event
}

// DefaultPath is $GLASSBOX_HOME/journal.db.
func DefaultPath() string { return filepath.Join(home.Home(), FileName) }

// OpenDefault opens (creating if needed) the journal in the glassbox home.
func OpenDefault(o Options) (*Journal, error) {
	if !o.ReadOnly {
		if _, err := home.Ensure(); err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
	}
	return Open(DefaultPath(), o)
}

// Open opens the journal at path, creating it unless o.ReadOnly. A
// writable open marks the jobs left running by a dead process as failed
// ("interrupted by shutdown") and applies the retention.
func Open(path string, o Options) (*Journal, error) {
	if o.Retention == 0 {
		o.Retention = 1000
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("journal %s: %w", path, ErrNoJournal)
		}
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-256)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	j := &Journal{db: db, path: path, opt: o, log: o.Logger,
		wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1), stopped: make(chan struct{})}
	if err := j.init(); err != nil {
		db.Close()
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if o.ReadOnly {
		close(j.stopped)
		return j, nil
	}
	go j.writer()
	return j, nil
}

func (j *Journal) init() error {
	var version int
	if err := j.db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	if version != 0 && version != schemaVersion {
		return fmt.Errorf("%w: schema version %d, this glassbox reads version %d (move the file aside to start a new journal)",
			ErrVersion, version, schemaVersion)
	}
	if !j.opt.ReadOnly {
		if _, err := j.db.Exec(schema); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		if _, err := j.db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion)); err != nil {
			return err
		}
		if err := j.recover(); err != nil {
			return fmt.Errorf("recover interrupted jobs: %w", err)
		}
		if err := j.trim(); err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		return nil
	}
	return j.db.QueryRow(`SELECT count(*) FROM jobs`).Scan(new(int))
}

// Path returns the database file's path.
func (j *Journal) Path() string { return j.path }

// Recovered returns the ids of the jobs Open marked as interrupted.
func (j *Journal) Recovered() []string { return append([]string(nil), j.recovered...) }

// Stats returns the writer's counters.
func (j *Journal) Stats() Stats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stats
}

// JobUpdated queues a job summary for writing (pipeline.Sink). It never
// blocks.
func (j *Journal) JobUpdated(job api.Job) { j.enqueue(item{job: &job}) }

// EventAppended queues an event for writing (pipeline.Sink). It never
// blocks.
func (j *Journal) EventAppended(ev api.Event) { j.enqueue(item{ev: &ev}) }

func (j *Journal) enqueue(it item) {
	j.mu.Lock()
	if j.closing || j.opt.ReadOnly {
		j.mu.Unlock()
		return
	}
	j.pending = append(j.pending, it)
	first := len(j.pending) == 1
	j.mu.Unlock()
	if first {
		signal(j.wake)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Flush writes everything queued so far and returns the first write error.
func (j *Journal) Flush() error {
	if j.opt.ReadOnly {
		return nil
	}
	ch := make(chan error, 1)
	j.mu.Lock()
	if j.closing {
		j.mu.Unlock()
		return ErrClosed
	}
	j.waiters = append(j.waiters, ch)
	j.mu.Unlock()
	signal(j.wake)
	signal(j.urgent)
	return <-ch
}

// Close writes what is queued and closes the database.
func (j *Journal) Close() error {
	j.mu.Lock()
	already := j.closing
	j.closing = true
	j.mu.Unlock()
	if already {
		return ErrClosed
	}
	signal(j.wake)
	signal(j.urgent)
	<-j.stopped
	if !j.opt.ReadOnly {
		// Fold the WAL back into the database so a reader sees one file.
		_, _ = j.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	}
	return j.db.Close()
}

// writer is the journal's goroutine: it waits for work, lets a batch
// gather for up to FlushInterval, and writes it in one transaction.
func (j *Journal) writer() {
	defer close(j.stopped)
	for {
		<-j.wake
		j.mu.Lock()
		hurry := j.closing || len(j.waiters) > 0
		j.mu.Unlock()
		if !hurry {
			t := time.NewTimer(j.opt.FlushInterval)
			select {
			case <-t.C:
			case <-j.urgent:
			}
			t.Stop()
		}
		j.mu.Lock()
		batch, waiters, closing := j.pending, j.waiters, j.closing
		j.pending, j.waiters = nil, nil
		j.mu.Unlock()
		err := j.write(batch)
		for _, w := range waiters {
			w <- err
		}
		if closing {
			return
		}
	}
}
