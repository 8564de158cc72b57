// Package ollama is a small client for a local Ollama server: streaming chat
// (/api/chat) and embeddings (/api/embed: Embedder, a memory.Embedder over an
// Ollama model), plus the conversation helpers the
// memory layer plugs in: a Summarizer that compresses old turns, a Distiller
// that proposes which memories a conversation adds, updates or deletes
// (memory.Distiller; prompt and answer format in docs/distill.md, any invalid
// answer refused with ErrBadAnswer so the store's built-in distiller stands
// in), and an Extractor that picks the facts worth remembering from a turn.
//
// Nothing leaves the machine unless the configured base URL points elsewhere;
// the default is the loopback address Ollama listens on (overridable with the
// OLLAMA_HOST environment variable, as Ollama's own CLI does).
//
// A connection that is refused is retried a few times with a short backoff
// (Ollama may be starting); when the server stays unreachable the error wraps
// ErrNotRunning and says how to start it.
package ollama
