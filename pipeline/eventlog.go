package pipeline

import "github.com/glassbox-ai/glassbox/api"

// logChunk is how many events one chunk of a job's log holds.
const logChunk = 256

// eventLog is a job's events in fixed-size chunks: appending never copies
// earlier events (a long generation's log is not reallocated token after
// token), and a reader may keep slices of it after the job's lock is
// released, because elements are never rewritten once appended.
type eventLog struct {
	chunks [][]api.Event // every chunk but the last is full
	n      int
}

func (l *eventLog) len() int { return l.n }

func (l *eventLog) append(ev api.Event) {
	if len(l.chunks) == 0 || len(l.chunks[len(l.chunks)-1]) == logChunk {
		l.chunks = append(l.chunks, make([]api.Event, 0, logChunk))
	}
	last := len(l.chunks) - 1
	l.chunks[last] = append(l.chunks[last], ev)
	l.n++
}

// from returns the events from index i on, as read-only slices of the
// chunks, in order.
func (l *eventLog) from(i int) [][]api.Event {
	if i >= l.n {
		return nil
	}
	i = max(i, 0)
	c := i / logChunk
	out := make([][]api.Event, 0, len(l.chunks)-c)
	out = append(out, l.chunks[c][i%logChunk:])
	return append(out, l.chunks[c+1:]...)
}
