// Package dashboard is the web dashboard `memctl serve` serves at /: plain
// HTML, CSS and JavaScript embedded in the binary (no build step, no
// third-party code), which talks to the service only through its public JSON
// API, sending the user's token or key with every call, so the server
// enforces what the key may see and do.
//
// # Browser safety
//
// The pages are same-origin with the API, so they pass the service's Host
// and Origin checks and send JSON bodies as the API requires; the dashboard
// adds nothing to those checks and needs no exemption from them. Its
// responses carry a Content-Security-Policy that allows only its own scripts
// and styles and no framing. Every stored text (memories, sessions, tasks,
// turns) reaches the page through textContent or attribute setters, never
// through innerHTML, so a memory holding markup shows as text.
//
// The files hold no data and need no token: Handler serves them to anyone
// who passes the guard, and IsAsset says which requests are for them.
package dashboard
