// Package server exposes a memory.Store to other programs: an HTTP JSON API
// (remember, recall, forget and restore, sessions, short-term context, working-memory
// tasks, stats, health), Prometheus metrics at /metrics, an OpenAPI document
// at /openapi.json, and the Model Context Protocol over streamable HTTP at
// /mcp: remember, recall, forget, restore, forgotten and sessions, single
// memories (get, list, update, delete, history, revert), short-term memory
// (context, add_turn, distill, clear_context) and working memory (tasks, task,
// start_task, update_step, finish_task, delete_task). NewMCP builds the same
// MCP tools for other transports (memctl mcp serves them over stdio), and
// NewMCPFor builds them over any api.Ops (memctl mcp on a store a server
// holds serves them through that server's API).
//
// # One request layer
//
// What an operation takes, checks, refuses and answers is defined once, in
// package api, for every door. The routes (handlers.go, memories.go,
// trash.go, admin.go) only translate: a body is decoded into the
// operation's request (bodyOp, pathBodyOp), path values and query
// parameters become its arguments, and the answer is written as JSON; the
// long admin operations run as jobs (startOp) under the caller of the
// request that started them. The MCP tools (mcp.go) take the same request
// structs as their input (a memory's or task's ID as a field) and answer
// the same structs, so HTTP and MCP accept and return the same fields;
// cmd/memctl's TestParity sends the same requests through the library,
// HTTP, MCP and memctl and compares the answers. The request and answer
// types keep their server names as aliases (RememberRequest = api.RememberRequest).
// POST /v1/remember takes a text or a conversation's messages (with infer),
// POST /v1/sessions/{session}/distill distills a session's short-term turns,
// and remember, recall, list (?user_id=&agent_id=&run_id=) and forget take
// mem0's scope IDs (api.ScopeIDs), which name the session the key's scope
// is checked against.
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
// take the same filter, and the MCP tools get, list, update, delete, history
// and revert mirror them. Every memory is written in its one JSON form,
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
// The key reaches the request layer as a *Caller (api.Caller; Caller, Right
// and Scope are aliases here) in the request context, and the layer checks
// it in every operation (see package api): the right first, the sessions a
// request names against the scope (403), store-wide queries confined to
// the scope, and memories and tasks outside it reported missing (404; task
// IDs are per session: ?session= or the tools' "session" names a task's
// session when the key sees several of one ID). CallerFrom(ctx) returns the
// caller (never nil; outside an authenticated request a caller with no
// rights, so checks fail closed).
//
// Every route declares an Access when registered: h.route(pattern, access,
// fn). The wrapper checks Access.Right before fn runs, and for SessionPath
// also the {session} path value; SessionHandler routes leave their
// sessions to the request layer; store-wide routes need
// RightAdmin (an admin key must have the scope "*"). The security tests
// walk the route table (h.routes) and fail for a route they have no probe
// for. A key's rights hold in every answer, not only in which routes it
// may call: a write answers a key without the read right with IDs, counts
// and states only (the layer's receipts: MemoryReceipt, ConversationReceipt,
// TaskReceipt, a cleanup's ids and count without its memories), never with
// stored text; TestWriteOnlyKeyGetsNoStoredText calls every route and tool
// with such a key. MCP tools run the same operations (mcp.go): over HTTP the
// caller travels in the SDK's TokenInfo, which also ties an MCP session to
// the key that opened it, and each call runs under it. Handler.Routes lists
// the route table for tests in other packages. /metrics labels requests by key name; no secret
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
