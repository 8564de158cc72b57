// Command memctl administers engram memory stores from the shell and serves
// them to other programs.
//
//	memctl quickstart                      # a demo store: remember and recall, no server, no downloads
//	memctl remember --session alice "Alice prefers green tea"
//	memctl recall --session alice --explain "what does Alice drink?"
//	memctl serve --addr 127.0.0.1:7077     # HTTP JSON API, /metrics, MCP over streamable HTTP
//	memctl mcp                             # MCP over stdio, for agent clients
//	memctl chat --session alice            # a memory-augmented chat with a local Ollama model
//
// # Configuration
//
// Every flag can also be set by an environment variable, ENGRAM_ followed by
// the flag's name in upper case with dashes as underscores (--dir is
// ENGRAM_DIR, --ollama-url is ENGRAM_OLLAMA_URL), or by a key of the same name
// in a JSON config file (--config, ENGRAM_CONFIG, default
// $XDG_CONFIG_HOME/engram/config.json). Flags win over environment variables,
// which win over the config file. The store lives in --dir, by default
// $XDG_DATA_HOME/engram (~/.local/share/engram); quickstart's demo store
// lives beside it, in engram-quickstart, unless --dir or ENGRAM_DIR is given.
//
// A store records the embedder it was last opened or re-embedded with (kind
// and model location, e.g. onnx and the model directory made absolute), so
// every command opens it with that model when --embedder is not given; a
// store without a record opens with the built-in lexical embedder.
//
// # Scopes and conversations
//
// remember, recall, list and forget take mem0's --user-id, --agent-id and
// --run-id (api.ScopeIDs, memory.Scope): with one given and no --session on
// the command line, they name the session and a default session
// (ENGRAM_SESSION, the config file) gives way. remember --messages FILE (or -)
// remembers a conversation, a JSON array of {"role", "text" (or mem0's
// "content"), "time"}, verbatim or with --infer distilled; context distill
// distills a session's short-term turns. recall takes --as-of,
// --superseded, --min-score and --min-relative (0 turns a floor off), marks
// results a newer memory changes, and with --explain ends with
// memory.LexicalNote on a store that uses the built-in lexical embedder
// (through a server: when the key may read its statistics).
//
// # Through a running server
//
// While `memctl serve` holds a store, the commands that read or write it
// (remember, recall, get, list, update, history, forget, restore, forgotten,
// tasks, context, chat, sessions, mcp and the admin commands) find the
// server's address in the store's LOCK file and run through its HTTP API,
// with the same output and exit codes; --server URL (ENGRAM_SERVER) names a server explicitly, and
// --server-token (ENGRAM_TOKEN) is the key sent (a 401 or 403 says so); chat's conversation is then
// compressed by the server's summarizer. init, repair and migrate still need
// the store closed. The default session's conversation (context or chat with
// --session "") has no API path and is refused through a server.
//
// The data commands are written once against api.Ops (client_data.go):
// dataOps returns the request layer on the store opened here (api.Local,
// as api.LocalCaller) or remoteData, the same operations through the
// server's routes; the admin commands go through adminOps the same way
// (admin_ops.go). `memctl mcp` serves server.NewMCPFor over whichever it
// gets, so on a served store its tools run through the server with the key
// ENGRAM_TOKEN (or --server-token) names. TestParity holds every door to
// the library's answers.
//
// # Exit codes
//
// 0 success, 1 the operation failed, 2 the command line was wrong, 3 the
// store is locked by another process, 4 the store is encrypted and the
// passphrase or key file is wrong or was not given (nothing was written).
//
// # Encryption
//
// `memctl init --encrypt` creates an encrypted store (docs/format/encryption.md).
// Every command then needs its passphrase or key file: --passphrase-file,
// --key-file, $ENGRAM_PASSPHRASE, $ENGRAM_KEY_FILE or a prompt on the
// terminal, never an argument. `memctl keyfile PATH` writes a new key file;
// `memctl change-key` re-seals the keys under a new passphrase or key file;
// `memctl rotate-keys` makes new data keys and rewrites the files under them.
package main
