package journal

import (
	"database/sql"
	"encoding/json"
	"os"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// Interrupted is the cause recorded for a job whose process stopped while
// it was queued or running.
const Interrupted = "interrupted by shutdown"

// recover marks the jobs left queued or running by a process that no
// longer exists as failed, in the stage they had reached, appending an
// error event and the terminal state event to their logs.
func (j *Journal) recover() error {
	rows, err := j.db.Query(`SELECT id, stage, owner, created FROM jobs WHERE state IN (?, ?)`,
		api.StateQueued, api.StateRunning)
	if err != nil {
		return err
	}
	type orphan struct {
		id, stage string
		owner     int
		created   int64
	}
	var orphans []orphan
	for rows.Next() {
		var o orphan
		if err := rows.Scan(&o.id, &o.stage, &o.owner, &o.created); err != nil {
			rows.Close()
			return err
		}
		if o.owner == os.Getpid() || !alive(o.owner) {
			orphans = append(orphans, o)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, o := range orphans {
		if err := j.markInterrupted(o.id, o.stage, o.created); err != nil {
			return err
		}
		j.recovered = append(j.recovered, o.id)
		j.log.Warn("journal: job interrupted by shutdown", "job", o.id, "stage", o.stage)
	}
	return nil
}

func (j *Journal) markInterrupted(id, stage string, created int64) error {
	tx, err := j.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// The last event that reached the disk says when the process was last
	// heard from: the job ended there.
	var last sql.NullInt64
	var lastData sql.NullString
	if err := tx.QueryRow(`SELECT last, data FROM events WHERE job = ? ORDER BY first DESC LIMIT 1`, id).
		Scan(&last, &lastData); err != nil && err != sql.ErrNoRows {
		return err
	}
	end := time.Unix(0, created).UTC()
	if lastData.Valid {
		if evs, err := decodeChunk(lastData.String, 0); err == nil && len(evs) > 0 && !evs[len(evs)-1].Time.IsZero() {
			end = evs[len(evs)-1].Time
		}
	}
	if stage == "" {
		stage = api.StateQueued
	}
	e := &api.Error{Stage: stage, Message: stage + ": " + Interrupted, Cause: Interrupted,
		Hint: "the process running it stopped (crash, kill or power loss); run the job again"}
	dur := float64(end.Sub(time.Unix(0, created)).Microseconds()) / 1000
	evs := []api.Event{
		{Seq: last.Int64 + 1, Time: end, Job: id, Type: api.TypeError, Stage: stage, Error: e},
		{Seq: last.Int64 + 2, Time: end, Job: id, Type: api.TypeState, State: api.StateFailed, DurationMS: dur},
	}
	var data []byte
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		data = append(append(data, b...), '\n')
	}
	if _, err := tx.Exec(`INSERT INTO events (job, first, last, data) VALUES (?,?,?,?)`,
		id, evs[0].Seq, evs[1].Seq, string(data)); err != nil {
		return err
	}
	eb, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(`UPDATE jobs SET state = ?, stage = ?, finished = ?, duration_ms = ?, error = ?, last_seq = ?
		WHERE id = ?`, api.StateFailed, stage, end.UnixNano(), dur, string(eb), last.Int64+2, id); err != nil {
		return err
	}
	return tx.Commit()
}
