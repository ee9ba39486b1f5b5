package journal

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// schemaVersion is stored in PRAGMA user_version; a journal with another
// version is refused rather than misread.
const schemaVersion = 1

const schema = `
CREATE TABLE IF NOT EXISTS jobs (
	id          TEXT PRIMARY KEY,
	created     INTEGER NOT NULL,   -- unix nanoseconds
	kind        TEXT NOT NULL DEFAULT '',
	model       TEXT NOT NULL DEFAULT '',
	state       TEXT NOT NULL,
	stage       TEXT NOT NULL DEFAULT '',
	started     INTEGER,
	finished    INTEGER,
	duration_ms REAL NOT NULL DEFAULT 0,
	params      TEXT,
	result      TEXT,
	error       TEXT,               -- api.Error as JSON
	last_seq    INTEGER NOT NULL DEFAULT 0,
	owner       INTEGER NOT NULL DEFAULT 0  -- pid of the process running it
);
CREATE INDEX IF NOT EXISTS jobs_created ON jobs(created);
-- A job's events are stored in chunks, one per write batch: the events
-- first..last as JSON lines. One row per batch instead of one per token
-- keeps the writer's cost per event to the JSON encoding.
CREATE TABLE IF NOT EXISTS events (
	job   TEXT NOT NULL,
	first INTEGER NOT NULL,
	last  INTEGER NOT NULL,
	data  TEXT NOT NULL,             -- api.Event JSON lines, seq first..last
	PRIMARY KEY (job, first)
) WITHOUT ROWID;
`

// trimEvery is how many ended jobs pass between two retention passes.
const trimEvery = 50

// write commits one batch in a single transaction.
func (j *Journal) write(batch []item) error {
	if len(batch) == 0 {
		return nil
	}
	t0 := time.Now()
	err := j.writeTx(batch)
	j.mu.Lock()
	j.stats.Busy += time.Since(t0)
	if err != nil {
		j.stats.Errors++
	} else {
		j.stats.Batches++
	}
	trim := j.sinceTrim >= trimEvery
	if trim {
		j.sinceTrim = 0
	}
	j.mu.Unlock()
	if err != nil {
		j.log.Error("journal: write failed; events are lost", "path", j.path, "items", len(batch), "err", err)
		return err
	}
	if trim {
		if err := j.trim(); err != nil {
			j.log.Error("journal: retention failed", "path", j.path, "err", err)
		}
	}
	return nil
}

func (j *Journal) writeTx(batch []item) error {
	tx, err := j.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	upJob, err := tx.Prepare(`INSERT INTO jobs (id, created, kind, model, state, stage, started, finished,
		duration_ms, params, result, error, last_seq, owner) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET kind=excluded.kind, model=excluded.model, state=excluded.state,
		stage=excluded.stage, started=excluded.started, finished=excluded.finished,
		duration_ms=excluded.duration_ms, params=excluded.params, result=excluded.result,
		error=excluded.error, last_seq=max(jobs.last_seq, excluded.last_seq)`)
	if err != nil {
		return err
	}
	defer upJob.Close()
	type chunk struct {
		first, last int64
		stage       string // the last stage started in the chunk
		buf         bytes.Buffer
		enc         *json.Encoder
	}
	chunks := map[string]*chunk{}
	var order []string // jobs in the order their first event came
	var nEv, nJob, ended int64
	pid := os.Getpid()
	for _, it := range batch {
		switch {
		case it.job != nil:
			if err := execJob(upJob, it.job, pid); err != nil {
				return err
			}
			nJob++
			if api.Terminal(it.job.State) {
				ended++
			}
		case it.ev != nil:
			c := chunks[it.ev.Job]
			if c == nil {
				c = &chunk{first: it.ev.Seq}
				c.enc = json.NewEncoder(&c.buf)
				chunks[it.ev.Job] = c
				order = append(order, it.ev.Job)
			}
			if err := c.enc.Encode(it.ev); err != nil {
				return fmt.Errorf("event %d of job %s: %w", it.ev.Seq, it.ev.Job, err)
			}
			c.last = it.ev.Seq
			if it.ev.Type == api.TypeStageStart {
				c.stage = it.ev.Stage
			}
			nEv++
		}
	}
	for _, id := range order {
		c := chunks[id]
		if _, err := tx.Exec(`INSERT OR REPLACE INTO events (job, first, last, data) VALUES (?,?,?,?)`,
			id, c.first, c.last, c.buf.String()); err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE jobs SET last_seq = max(last_seq, ?),
			stage = CASE WHEN ? = '' THEN stage ELSE ? END WHERE id = ?`, c.last, c.stage, c.stage, id); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	j.mu.Lock()
	j.stats.Events += nEv
	j.stats.Jobs += nJob
	j.sinceTrim += int(ended)
	j.mu.Unlock()
	return nil
}

func execJob(st *sql.Stmt, job *api.Job, pid int) error {
	var errJSON, params, result any
	if job.Error != nil {
		b, err := json.Marshal(job.Error)
		if err != nil {
			return err
		}
		errJSON = string(b)
	}
	if len(job.Params) > 0 {
		params = string(job.Params)
	}
	if len(job.Result) > 0 {
		result = string(job.Result)
	}
	_, err := st.Exec(job.ID, job.Created.UnixNano(), job.Kind, job.Model, job.State, job.Stage,
		nanos(job.Started), nanos(job.Finished), job.DurationMS, params, result, errJSON, job.LastSeq, pid)
	return err
}

func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// trim deletes all but the newest Retention jobs and their events.
func (j *Journal) trim() error {
	if j.opt.Retention < 0 {
		return nil
	}
	tx, err := j.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	const old = `SELECT id FROM jobs ORDER BY created DESC, id DESC LIMIT -1 OFFSET ?`
	if _, err := tx.Exec(`DELETE FROM events WHERE job IN (`+old+`)`, j.opt.Retention); err != nil {
		return err
	}
	if _, err := tx.Exec(`DELETE FROM jobs WHERE id IN (`+old+`)`, j.opt.Retention); err != nil {
		return err
	}
	return tx.Commit()
}
