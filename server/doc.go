// Package server exposes a memory.Store to other programs: an HTTP JSON API
// (remember, recall, forget and restore, sessions, short-term context, working-memory
// tasks, stats, health), Prometheus metrics at /metrics, an OpenAPI document
// at /openapi.json, and the Model Context Protocol over streamable HTTP at
// /mcp: remember, recall, forget and restore, short-term memory (context, add_turn,
// clear_context) and working memory (tasks, task, start_task, update_step,
// finish_task, delete_task). NewMCP builds the same MCP tools for other
// transports (memctl mcp serves them over stdio).
//
// # Administration and the dashboard
//
// The admin routes (admin.go, admin right) run the store's maintenance on a
// live store: stats and flush at once; check, compact, cleanup, archive
// restore, backup under AdminOptions.BackupRoot, import and reembed as jobs
// (jobs.go), one at a time per store, cancellable, running under the
// server's context rather than the request's so that they outlive a client
// that goes away, with progress at GET /v1/jobs/{id}; export (GET) and
// backup.tar (POST, since it takes the job slot) stream. Export files are
// written and read by memory.Store.WriteExport and memory.ReadExportFile, the
// same code `memctl export` and `import`
// run. A small in-memory time series (series.go) of memory count and recall
// latency feeds the dashboard's plots. The dashboard (package dashboard) is
// served at / and /ui/ without a key and past the guard only; it calls the
// API with the user's key like any client.
//
// # Memories
//
// Single memories have routes of their own (memories.go): GET, PATCH and DELETE
// /v1/memories/{id}, GET /v1/memories/{id}/history, POST /v1/memories/{id}/revert
// and GET /v1/memories (a page, newest first, filtered by session, tag, source,
// since, until and where, a filter in the JSON filter language of
// docs/format/filter.md); recall, forget, POST /v1/export and POST /v1/cleanup
// take the same filter, and the MCP tools get, list, update, delete and history
// (mcp_memories.go) mirror them. Every memory is written in its one JSON form,
// memory.MemoryJSON. Forgetting by ID is all or nothing: an unknown ID, or one
// outside the caller's scope, is a 404 naming it, and nothing is deleted.
// On a store with a forget retention (memctl's default), forgotten memories go
// to the trash (trash.go): GET /v1/forgotten lists it in the caller's scope,
// POST /v1/restore and the MCP tool restore bring memories back under their
// IDs, and "purge": true on forget deletes for good.
//
// # Security
//
// Memories are private data. Every route refuses a request a browser marks
// as sent for another site (Sec-Fetch-Site cross-site or same-site: 403,
// the <img> GETs and navigations that carry no Origin included). Every
// route but /healthz then refuses a Host that does not name this server
// (421, DNS rebinding), an Origin naming another host (403, cross-site
// requests) and a body that is not application/json (415, the bodies a
// browser sends without a preflight); see guard.go. No GET changes the store
// or starts a job (TestNoGetStartsAJob): the backup download is POST
// /v1/admin/backup.tar. Request bodies are limited (Options.MaxBodyBytes) and every
// request runs under a timeout (Options.RequestTimeout), /mcp's included: its
// bodies are refused past the limit (413) before the MCP SDK reads them,
// each MCP call runs under the timeout, and MCP sessions close when idle
// (Options.MCPSessionIdle) and are bounded in number (Options.MCPMaxSessions:
// a new one closes the one idle the longest, or is refused with 503 while all
// are busy; mcpsessions.go).
//
// # Keys and scopes
//
// ServeHTTP then resolves the bearer key (auth.go, keys.go): a key of the
// key file (Options.KeysFile: name, SHA-256 hash, session patterns, rights;
// re-read when it changes) or Options.Token, an admin key named "token".
// With neither the service is open and every request is LocalCaller, which
// ListenAndServe allows on loopback only. A missing or unknown key is 401.
// With Options.KeysFileMayAppear the key file may not exist yet: the
// service is as without it until it appears, and enforces it (logged) from
// the first request after; a key file once enforced stays so (deleting it
// revokes its keys, it does not open the service).
//
// The key reaches handlers as a *Caller in the request context. The API a
// handler uses:
//
//   - CallerFrom(ctx) returns the caller (never nil; outside an
//     authenticated request a caller with no rights, so checks fail closed).
//   - c.Can(RightRead|RightWrite|RightAdmin) reports a right.
//   - c.Check(right, sessions...) returns an error matching ErrForbidden
//     (403) unless c holds right and every session lies in its scope.
//   - c.MayUse(session), c.SeesAll(), c.FilterSessions(names) and
//     VisibleBy(c, items, sessionOf) filter what a listing shows.
//   - h.scopeFilter(ctx, c) gives the memory.Filter that confines a
//     store-wide query (all_sessions, list, export) to c's sessions;
//     h.scopeRecall applies it to RecallOptions; h.scopeIDs drops memory
//     IDs outside the scope (they act as unknown IDs); h.scopedTask and
//     findTask find a task among the caller's sessions only (task IDs are
//     per session; ?session= or the tools' "session" names one), so a task
//     outside the scope is not found, like an unknown one.
//
// Every route declares an Access when registered: h.route(pattern, access,
// fn). The wrapper checks Access.Right before fn runs, and for SessionPath
// also the {session} path value; SessionHandler routes check their
// sessions themselves with the calls above; store-wide routes need
// RightAdmin (an admin key must have the scope "*"). The security tests
// walk the route table (h.routes) and fail for a route they have no probe
// for. A key's rights hold in every answer, not only in which routes it
// may call: a write answers a key without the read right with IDs, counts
// and states only (receipts.go: MemoryReceipt, ConversationReceipt,
// TaskReceipt, a cleanup's ids and count without its memories), never with
// stored text; TestWriteOnlyKeyGetsNoStoredText calls every route and tool
// with such a key. MCP tools check the same rights and scopes (mcp.go): over HTTP the
// caller travels in the SDK's TokenInfo, which also ties an MCP session to
// the key that opened it. /metrics labels requests by key name; no secret
// is ever logged.
//
// # Errors
//
// Errors are JSON objects {"error": "..."}: 400 for invalid input (nothing
// was written), 401 for a missing or wrong key, 403 for a foreign Origin or
// a right or session the key lacks,
// 404 for unknown tasks or routes, 413 for oversized bodies, 415 for a body
// that is not JSON, 421 for a foreign Host, 501 for an operation the backend
// does not have, 507 Insufficient Storage when the disk holding the store is
// full (the write failed; the next one succeeds once space is freed, with no
// restart; MCP tools say the same as a tool error), 500 otherwise. A recall
// never fails for a full disk: recording its access statistics is best
// effort (engram_touch_failures_total counts those that could not be).
package server
