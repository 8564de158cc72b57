// Package server exposes a memory.Store to other programs: an HTTP JSON API
// (remember, recall, forget, sessions, short-term context, working-memory
// tasks, stats, health), Prometheus metrics at /metrics, an OpenAPI document
// at /openapi.json, and the Model Context Protocol over streamable HTTP at
// /mcp. NewMCP builds the same MCP tools for other transports (memctl mcp
// serves them over stdio).
//
// # Security
//
// Memories are private data. Every route but /healthz first refuses a Host
// that does not name this server (421, DNS rebinding), an Origin naming
// another host (403, cross-site requests) and a body that is not
// application/json (415, the bodies a browser sends without a preflight);
// see guard.go. The handler then checks a bearer token on every
// route except /healthz when Options.Token is set; binding an address other
// than loopback without a token is refused by ListenAndServe. Request bodies
// are limited (Options.MaxBodyBytes) and every request runs under a timeout.
//
// # Errors
//
// Errors are JSON objects {"error": "..."}: 400 for invalid input (nothing
// was written), 401 for a missing or wrong token, 403 for a foreign Origin,
// 404 for unknown tasks or routes, 413 for oversized bodies, 415 for a body
// that is not JSON, 421 for a foreign Host, 500 otherwise.
package server
