// Package web is glassbox's browser UI: plain HTML, CSS and JavaScript
// modules embedded in the binary with go:embed (no build step, no CDN, works
// offline), served by glassbox serve at "/".
//
// The page talks only to the server's public HTTP API (docs/API.md): it
// starts jobs with POST /v1/jobs, follows them over SSE from
// /v1/jobs/{id}/events (resuming with Last-Event-ID, so a reload or a lost
// connection neither loses nor repeats a token), lists jobs from
// GET /v1/jobs, resident models from GET /v1/ps, models and their plan
// verdicts from GET /v1/models and POST /v1/plan, the sampling settings'
// defaults (its placeholders) from GET /v1/defaults, and unloads a model
// with Ollama's keep_alive 0. It has four views: Generate (chat or
// completion with sampling settings and a stop button), the pipeline view of
// a job (one bar per stage on the job's time axis, filled live — while a
// stage of known total runs, the axis reaches its expected end — with the
// numbers under each and the failed stage in red with its cause and hint),
// Jobs, and Models. Each view says it is loading until its first data comes.
//
// Imports: the standard library only.
package web
