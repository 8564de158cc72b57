// Package server exposes a memory.Store to other programs: an HTTP JSON API
// (remember, recall, forget, sessions, short-term context, working-memory
// tasks, stats, health), Prometheus metrics at /metrics, an OpenAPI document
// at /openapi.json, and the Model Context Protocol over streamable HTTP at
// /mcp. NewMCP builds the same MCP tools for other transports (memctl mcp
// serves them over stdio).
//
// # Security
//
// Memories are private data. The handler checks a bearer token on every
// route except /healthz when Options.Token is set; binding an address other
// than loopback without a token is refused by ListenAndServe. Request bodies
// are limited (Options.MaxBodyBytes) and every request runs under a timeout.
//
// # Errors
//
// Errors are JSON objects {"error": "..."}: 400 for invalid input (nothing
// was written), 401 for a missing or wrong token, 404 for unknown tasks or
// routes, 413 for oversized bodies, 500 otherwise.
package server
