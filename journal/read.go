package journal

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

const jobCols = `id, created, kind, model, state, stage, started, finished, duration_ms, params, result, error, last_seq`

// Jobs returns up to limit jobs, newest first (limit <= 0: all).
func (j *Journal) Jobs(limit int) ([]api.Job, error) { return j.JobsBefore("", limit) }

// JobsBefore returns up to limit jobs created before the job with id
// before ("": from the newest), newest first: one page of a job list.
func (j *Journal) JobsBefore(before string, limit int) ([]api.Job, error) {
	if limit <= 0 {
		limit = -1
	}
	var rows *sql.Rows
	var err error
	if before == "" {
		rows, err = j.db.Query(`SELECT `+jobCols+` FROM jobs ORDER BY created DESC, id DESC LIMIT ?`, limit)
	} else {
		rows, err = j.db.Query(`SELECT `+jobCols+` FROM jobs
			WHERE (created, id) < (SELECT created, id FROM jobs WHERE id = ?)
			ORDER BY created DESC, id DESC LIMIT ?`, before, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: list jobs: %w", err)
	}
	defer rows.Close()
	var out []api.Job
	for rows.Next() {
		job, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("journal: list jobs: %w", err)
		}
		out = append(out, job)
	}
	return out, rows.Err()
}

// Job returns the job with this id, or the only job whose id starts with
// it.
func (j *Journal) Job(id string) (api.Job, error) {
	job, err := scanJob(j.db.QueryRow(`SELECT `+jobCols+` FROM jobs WHERE id = ?`, id))
	if err == nil {
		return job, nil
	}
	if err != sql.ErrNoRows {
		return api.Job{}, fmt.Errorf("journal: job %s: %w", id, err)
	}
	rows, err := j.db.Query(`SELECT `+jobCols+` FROM jobs WHERE substr(id, 1, ?) = ? LIMIT 2`, len(id), id)
	if err != nil {
		return api.Job{}, fmt.Errorf("journal: job %s: %w", id, err)
	}
	defer rows.Close()
	var found []api.Job
	for rows.Next() {
		job, err := scanJob(rows)
		if err != nil {
			return api.Job{}, fmt.Errorf("journal: job %s: %w", id, err)
		}
		found = append(found, job)
	}
	switch {
	case id == "" || len(found) == 0:
		return api.Job{}, fmt.Errorf("journal: job %q: %w", id, ErrNotFound)
	case len(found) > 1:
		return api.Job{}, fmt.Errorf("journal: job %q: %w", id, ErrAmbiguous)
	}
	return found[0], nil
}

// Events returns the job's events with Seq >= fromSeq, in order.
func (j *Journal) Events(id string, fromSeq int64) ([]api.Event, error) {
	rows, err := j.db.Query(`SELECT data FROM events WHERE job = ? AND last >= ? ORDER BY first`, id, fromSeq)
	if err != nil {
		return nil, fmt.Errorf("journal: events of %s: %w", id, err)
	}
	defer rows.Close()
	var out []api.Event
	for rows.Next() {
		var data string
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("journal: events of %s: %w", id, err)
		}
		evs, err := decodeChunk(data, fromSeq)
		if err != nil {
			return nil, fmt.Errorf("journal: events of %s: %w", id, err)
		}
		out = append(out, evs...)
	}
	return out, rows.Err()
}

// decodeChunk decodes a chunk's JSON lines, keeping events with Seq >= fromSeq.
func decodeChunk(data string, fromSeq int64) ([]api.Event, error) {
	dec := json.NewDecoder(strings.NewReader(data))
	var out []api.Event
	for dec.More() {
		var ev api.Event
		if err := dec.Decode(&ev); err != nil {
			return nil, fmt.Errorf("corrupt event chunk: %w", err)
		}
		if ev.Seq >= fromSeq {
			out = append(out, ev)
		}
	}
	return out, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanJob(s scanner) (api.Job, error) {
	var job api.Job
	var created int64
	var started, finished sql.NullInt64
	var params, result, errJSON sql.NullString
	if err := s.Scan(&job.ID, &created, &job.Kind, &job.Model, &job.State, &job.Stage, &started, &finished,
		&job.DurationMS, &params, &result, &errJSON, &job.LastSeq); err != nil {
		return job, err
	}
	job.Created = time.Unix(0, created).UTC()
	if started.Valid {
		job.Started = time.Unix(0, started.Int64).UTC()
	}
	if finished.Valid {
		job.Finished = time.Unix(0, finished.Int64).UTC()
	}
	if params.Valid {
		job.Params = json.RawMessage(params.String)
	}
	if result.Valid {
		job.Result = json.RawMessage(result.String)
	}
	if errJSON.Valid {
		job.Error = new(api.Error)
		if err := json.Unmarshal([]byte(errJSON.String), job.Error); err != nil {
			return job, fmt.Errorf("job %s: corrupt error: %w", job.ID, err)
		}
	}
	return job, nil
}
