// Package pipeline turns a generation into a job that moves through named
// stages and reports every step as an ordered, typed event.
//
// Stages, in order: queued → plan → load → encode → infer → decode →
// deliver. For text, infer is two stages, prefill (the prompt in one pass)
// and generate (one token per step), and decode is the detokenizer's flush
// (usually skipped: text is decoded while generating). For diffusion, infer
// is the sampling steps and decode the VAE; for video, decode is frames →
// MP4. Stages that do not apply are reported as skipped, with a reason.
//
// Engines report through hooks carried in the context, the way
// net/http/httptrace does: TraceFrom(ctx).OnStageStart(StageLoad) and so
// on. The hooks are optional and nil-safe, so library code calls them
// unconditionally and costs nothing when nobody listens.
//
// Failures are *Error values naming the stage, the cause, the numbers and
// a hint; StageOf finds the stage of any error in a chain.
//
// A Manager runs jobs: it turns hooks into numbered events (api.Event),
// recovers a panic inside a stage as that stage's internal error, cancels
// through the context (recording how long the stop took), lets any number
// of subscribers follow a job from any sequence number without ever
// blocking the job, and hands every event to its sinks (the journal,
// metrics).
//
// Imports: api and the standard library.
package pipeline
