// Package server is glassbox's deliver stage over HTTP: one process, one
// port, several dialects over the same jobs.
//
//   - The native jobs API (/v1/jobs, /v1/jobs/{id}/events as Server-Sent
//     Events whose id is the event sequence number, /v1/plan, /v1/ps,
//     /v1/defaults (the options a job that sets none runs with),
//     /v1/models, /v1/cluster/workers (a cluster front's workers),
//     /metrics, /healthz; image and video jobs through the optional
//     ImageBackend and VideoBackend, a cluster through ClusterBackend).
//     A native job belongs to the server,
//     not to the connection: it runs on when its client goes away, and a
//     client that reconnects with Last-Event-ID misses nothing.
//   - Ollama's API (/api/generate, /api/chat as NDJSON, /api/tags,
//     /api/show, /api/ps, /api/version), documented at
//     https://github.com/ollama/ollama/blob/main/docs/api.md.
//   - OpenAI's API (/v1/chat/completions, /v1/completions as SSE ending
//     with "data: [DONE]", /v1/models), documented at
//     https://platform.openai.com/docs/api-reference; its images API too.
//   - Anthropic's Messages API, llama.cpp's server endpoints,
//     AUTOMATIC1111's /sdapi/v1 and ComfyUI's /prompt, /ws and /upload
//     (docs/API.md lists every endpoint).
//
// A compatible-API generation belongs to its connection: when the client
// disconnects, the request context ends and the generation stops within one
// decode step.
//
// Every generation is a job of the pipeline (package pipeline); the server
// only drives jobs through the small interfaces in backend.go (Backend for
// the work, Jobs for the job manager), which the serve command adapts to the
// real packages and tests replace with fakes. Admission goes through a
// bounded queue (queue.go): at most Parallel generations run at once, at most
// MaxQueue wait, the rest are refused with 503 and Retry-After.
//
// Before any of that, a guard (guard.go) stops web pages from using the
// server behind the user's back: on a loopback listener only a loopback
// Host is answered (DNS rebinding), a page of another origin only when
// Config.AllowOrigins (or the defaults: this machine's pages, local apps)
// allows it, with CORS headers and preflights, and a page's body only when
// declared JSON; no response may be framed. Uploads (blob.go) are bounded
// by MaxBlobBytes and the room on the backend's disk. The native jobs API
// refuses fields it does not know with the nearest known name (fields.go);
// the compatible dialects ignore them, as their originals do.
//
// Every refusal and failure is an *Error carrying the HTTP status and the
// pipeline stage it belongs to ("deliver" for bad requests and transport
// problems, "queued" for a full queue, the failing stage otherwise),
// rendered in the dialect of the endpoint.
//
// Imports: api, pipeline and the standard library.
package server
