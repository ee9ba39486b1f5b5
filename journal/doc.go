// Package journal stores jobs durably: their summaries (parameters, state,
// stage reached, result, error) and their full event logs, in an embedded
// SQLite database (modernc.org/sqlite, pure Go) in WAL mode, by default
// $GLASSBOX_HOME/journal.db.
//
// A *Journal is a pipeline.Sink: the manager hands it every job update and
// event, which it queues in memory and writes in batches, one transaction
// each, on its own goroutine, so generation never waits for the disk. A
// batch is at most FlushInterval old; a kill -9 loses at most that much
// and leaves the database consistent (SQLite transactions), and on the
// next Open every job that was still queued or running is marked failed
// in the stage it had reached, with the cause "interrupted by shutdown".
//
// Retention keeps the newest N jobs (default 1,000) with their events.
//
// Imports: api, internal/home, database/sql and the sqlite driver.
package journal
