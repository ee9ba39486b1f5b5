package pipeline

import (
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// trace returns the hooks that turn an engine's reports into j's events.
func (j *Job) trace() *Trace {
	return &Trace{
		StageStart:   j.onStageStart,
		StageDone:    j.onStageDone,
		StageSkipped: j.onStageSkipped,
		Progress:     j.onProgress,
		Token:        j.onToken,
		Warning:      j.onWarning,
		PartDone:     j.onPartDone,
		Preview:      j.onPreview,
	}
}

func (j *Job) onStageStart(s Stage) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.current = s
	j.started[s] = j.m.now()
	j.emitLocked(api.Event{Type: api.TypeStageStart, Stage: string(s)})
}

func (j *Job) onStageDone(s Stage, st StageStats) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var d time.Duration
	if t0, ok := j.started[s]; ok {
		d = j.m.now().Sub(t0)
	}
	ev := api.Event{Type: api.TypeStageDone, Stage: string(s), DurationMS: ms(d)}
	if st != (StageStats{}) {
		ev.Stats = &st
	}
	j.emitLocked(ev)
}

func (j *Job) onStageSkipped(s Stage, reason string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.emitLocked(api.Event{Type: api.TypeStageSkipped, Stage: string(s), Reason: reason})
}

func (j *Job) onProgress(s Stage, done, total int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	p := &api.Progress{Done: done, Total: total, Unit: j.unit(s)}
	if t0, ok := j.started[s]; ok && s != StageQueued {
		if el := j.m.now().Sub(t0).Seconds(); el > 0 {
			p.Rate = float64(done) / el
		}
	}
	j.emitLocked(api.Event{Type: api.TypeProgress, Stage: string(s), Progress: p})
}

// unit names what a stage's progress counts.
func (j *Job) unit(s Stage) string {
	switch s {
	case StageQueued:
		return "position"
	case StageLoad, StageDeliver:
		return "bytes"
	case StageEncode:
		if strings.HasPrefix(j.info.Kind, "vae") {
			return "layers"
		}
		return "tokens"
	case StagePrefill:
		return "tokens"
	case StageGenerate:
		if j.info.Kind == "image" || j.info.Kind == "video" {
			return "steps"
		}
		return "tokens"
	case StageDecode:
		switch {
		case j.info.Kind == "video" || j.info.Kind == "video-decode":
			// The causal VAE reports each frame it hands to the encoder;
			// so does glassbox decode's re-decode of a video job.
			return "frames"
		case j.info.Kind == "image" || j.info.Kind == "image-decode":
			// The KL-f8 decoder reports each block of its forward pass
			// (ResBlock, attention, resampling conv), over all tiles; so
			// does glassbox decode's re-decode of an image job.
			return "blocks"
		case strings.HasPrefix(j.info.Kind, "vae"):
			return "tiles"
		}
	}
	return ""
}

func (j *Job) onToken(tok api.Token) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.emitLocked(api.Event{Type: api.TypeToken, Stage: string(j.current), Token: &tok})
}

func (j *Job) onWarning(code, message string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.emitLocked(api.Event{Type: api.TypeWarning, Stage: string(j.current), Warning: &api.Warning{Code: code, Message: message}})
}

func (j *Job) onPartDone(s Stage, part string, d time.Duration, st StageStats) {
	j.mu.Lock()
	defer j.mu.Unlock()
	ev := api.Event{Type: api.TypePart, Stage: string(s), Part: part, DurationMS: ms(d)}
	if st != (StageStats{}) {
		ev.Stats = &st
	}
	j.emitLocked(ev)
}

func (j *Job) onPreview(p api.Preview) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.emitLocked(api.Event{Type: api.TypePreview, Stage: string(j.current), Preview: &p})
}
