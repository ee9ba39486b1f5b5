// Package api holds glassbox's wire types: the job event that the CLI's
// --json output, the server's SSE and NDJSON streams and the journal all
// share, and the job summary that lists and journal rows use.
//
// The JSON field names are snake_case and stable: a client written against
// docs/API.md keeps working as fields are added. Optional fields are
// omitted when empty; which fields an event carries depends on its Type
// (see Event).
//
// Imports: the standard library only.
package api
