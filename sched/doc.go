// Package sched keeps loaded models resident between jobs. A Residency
// holds values of any type (engine models, in the server) under a total
// memory budget:
//
//   - after its last user releases it, a model stays resident for a
//     keep-alive (default 5 minutes; per request: a duration, 0 = unload
//     now, negative = forever);
//   - loading a model that does not fit the budget first evicts idle models,
//     least recently used first; a model in use is never evicted, and a
//     request that cannot fit until running jobs finish waits for them;
//   - concurrent requests for one model share a single load;
//   - every load, reuse, eviction, expiry and unload is an Event with its
//     reason, given to Config.OnEvent, and reported through the requesting
//     job's pipeline.Trace (a reused model is a skipped load stage, an
//     eviction a warning).
//
// Values that implement io.Closer (or have a Close() method) are closed when
// unloaded. Time comes from a Clock, so tests can move it by hand.
//
// Imports: pipeline and the standard library.
package sched
