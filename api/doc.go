// Package api is engram's request layer: the operations every door offers
// (the Go library, HTTP and MCP served by `memctl serve`, and the memctl
// CLI), each defined once with its request and answer, its argument parsing
// and validation, the rights and sessions it needs, and its outcomes. The
// doors only translate: server decodes a route's body (or path values and
// query) into the request and writes the answer as JSON; its MCP tools take
// the same structs as their input and output; memctl builds requests from
// flags and prints the answers.
//
//	memory ──> api ──> server (HTTP, MCP)
//	             └───> cmd/memctl (local store, or a server's API)
//
// # Operations
//
// Ops is the data operations as one interface: remember (a text, or a
// conversation's messages with infer, answering the distillation's events),
// recall, forget (by IDs, a whole session or scope, or a filter; purge),
// restore and the trash, get, list, update, delete, history, revert,
// sessions, a session's conversation (context, add a turn, distill, clear)
// and tasks (list, read, start, record a step, finish, delete). Local implements it on a *memory.Store;
// memctl implements it over a server's HTTP API, so its commands and
// `memctl mcp` act and answer the same whether the store is open here or
// held by a running server. Local also runs the store-wide operations:
// statistics, flush, check, compact, cleanup (Cleanup in the caller's scope,
// AdminCleanup store-wide), the archive, reembed and the scoped export; the
// long ones take a Progress callback, and a server runs them as jobs.
//
// The request structs carry JSON tags (the HTTP bodies, unchanged from the
// routes' first release) and jsonschema descriptions (the MCP tools' input
// schemas), so a field added to a request reaches HTTP and MCP at once.
// The parsing the doors share lives here too: ParseMode and ParseFusion
// (hybrid, vector, keyword or bm25; weighted or rrf), ParseSuperseded
// (demote, hide, keep), ParseWhen (RFC 3339, a date, or an age such as 7d:
// since, until, a recall's as_of), and Selection, the tag, source, since and
// until shorthand that list and memctl's filter flags take. A recall's
// min_score and min_relative left out are the library's floors (0.05 and a
// fifth of the best), 0 none. Recall answers SessionEmpty when an empty
// result comes from a session without memories.
//
// # Scopes
//
// ScopeIDs is mem0's user_id, agent_id and run_id, which remember, recall,
// list and forget take besides or instead of the session, mapped by
// memory.Scope (one mapping in every door): the session is the user_id (the
// session's other name: a request giving both must give the same), else the
// agent_id, else the run_id; the IDs the session does not take are stored on
// the memories as the metadata agent_id and run_id, and a request naming
// them selects exactly those memories of the session. The caller's rights
// and scope apply to the session they resolve to.
//
// # Callers, rights and scopes
//
// Every operation asks the Caller its context carries (CallerFrom): a name,
// Rights (read, write, admin) and a Scope of session patterns. A door puts
// it there with WithCaller: the server the key a request authenticated with
// (for MCP over HTTP, the key that opened the MCP session), memctl and
// stdio MCP on a store this process opened LocalCaller (every right, every
// session). A context without a caller is nobody's: every check fails. An
// operation checks its right before anything else; a session named in the
// request must lie in the scope (ErrForbidden otherwise); store-wide
// queries (recall with AllSessions, list, the trash, tasks, export, cleanup)
// are confined to the scope; and a memory or task outside the scope is
// reported missing, exactly like an unknown one, so a key cannot probe
// other sessions. Task IDs are per session: a TaskRef names a task by its ID
// and, when the caller sees tasks of that ID in several sessions, by its
// session. Admin operations need RightAdmin, which only a key with the scope
// "*" holds.
//
// Rights hold in every answer too: a write answers a caller without the
// read right with a receipt (IDs, counts, states), never with stored text.
// MemoryAnswer, ConversationAnswer and TaskAnswer carry the object or the
// receipt and write and read either as JSON, so a client of a server gets
// what the server decided; a cleanup's CleanupResult holds its memories only
// for a reader.
//
// # Errors
//
// Errors match ErrBadRequest (a request refused before it ran: nothing
// changed), ErrForbidden, memory.ErrNotFound (a *memory.NotFoundError names
// the memories), memory.ErrInvalidInput and memory.ErrInvalidFilter (the
// memory layer's refusals) or memory.ErrUnsupported; the server maps them to
// 400, 403, 404, 400 and 501, MCP answers them as tool errors with the same
// text, and memctl prints them and exits 1.
//
// # Adding to the layer
//
// A new option of an operation is a field of its request struct (with its
// json and jsonschema tags) and a line where the request becomes the memory
// layer's options (RecallRequest.Options, for example); HTTP and MCP carry
// it at once, and memctl needs a flag. A new operation is a method of Local
// (and of Ops, with memctl's remote implementation), a route in server, a
// tool in server's NewMCPFor and a command; cmd/memctl's TestParity fails
// until it has a step, which sends the same request through every door and
// compares the answers.
//
// # Caveats
//
//   - Local does not own its store: closing it is the caller's business.
//   - Answers hold no references to the store's memory; they are the
//     caller's to keep and change.
//   - BM25's statistics depend on what a store has flushed and compacted,
//     so one recall on two copies of a store, one of them compacted, may
//     score and rank a little differently; that is the engine's, not a door's.
package api
