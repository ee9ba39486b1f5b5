package pipeline

import "github.com/glassbox-ai/glassbox/api"

// Stage names a step of the pipeline. The values are the wire names used in
// events, errors and the journal.
type Stage string

// The stages, in the order a job meets them.
const (
	StageQueued   Stage = "queued"
	StagePlan     Stage = "plan"
	StageLoad     Stage = "load"
	StageEncode   Stage = "encode"
	StagePrefill  Stage = "prefill"  // infer, part 1 (text): the prompt in one pass
	StageGenerate Stage = "generate" // infer, part 2 (text): one token per step; diffusion: sampling steps
	StageDecode   Stage = "decode"   // detokenizer flush; diffusion: VAE; video: frames → MP4
	StageDeliver  Stage = "deliver"
)

// Stages lists every stage in pipeline order.
var Stages = []Stage{StageQueued, StagePlan, StageLoad, StageEncode, StagePrefill, StageGenerate, StageDecode, StageDeliver}

// StageStats are the measurements a stage reports when it finishes (bytes
// read, items done, memory high-water, placement, roofline). It is the wire
// type itself, so engines fill it once.
type StageStats = api.StageStats

// Known reports whether s is one of the stages above.
func (s Stage) Known() bool {
	for _, k := range Stages {
		if k == s {
			return true
		}
	}
	return false
}
