package server

import (
	"errors"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
)

// guard holds the browser-safety checks every route but /healthz passes
// before authentication. They stop a web page the user happens to visit from
// driving a service it can reach (the loopback one in particular):
//
//   - Host must name this server (loopback names, the bound address, or a
//     configured name): stops DNS rebinding, where an attacker's name is
//     re-pointed at 127.0.0.1 so the page becomes "same origin" with us.
//   - Origin, when sent, must name one of the same hosts: stops cross-site
//     requests (CSRF) from pages on other origins, including fetch with
//     no-cors and form posts.
//   - A request body must be application/json: a browser can send
//     text/plain, form and multipart bodies cross-site without a CORS
//     preflight, but not JSON, so this closes the no-preflight path even for
//     a browser that sends no Origin.
//   - Sec-Fetch-Site, when sent, must not be cross-site or same-site: a
//     browser marks every request a page of another site makes with it
//     (an <img>, a link, a form, fetch), Origin or not, so this refuses what
//     a page elsewhere (another port of localhost included) makes a browser
//     send: its GETs and navigations too, which carry no Origin. Requests
//     of the dashboard (same-origin), of the user typing an address (none)
//     and of programs (no header) pass. It applies to every route,
//     /healthz included (checkFetchSite).
type guard struct {
	names map[string]bool // configured extra Host names, lower case
	bound atomic.Pointer[string]
}

func newGuard(names []string) *guard {
	g := &guard{names: make(map[string]bool, len(names))}
	for _, n := range names {
		if n = canonicalHost(n); n != "" {
			g.names[n] = true
		}
	}
	return g
}

// setBound records the address the server listens on (host:port).
func (g *guard) setBound(addr string) {
	host := canonicalHost(addr)
	g.bound.Store(&host)
}

// canonicalHost returns host (with or without a port) in lower case, without
// the port, IPv6 brackets or a trailing dot.
func canonicalHost(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// hostAllowed reports whether a Host header (or an Origin's host) names this
// server.
func (g *guard) hostAllowed(hostport string) bool {
	h := canonicalHost(hostport)
	if h == "" {
		return false
	}
	if h == "localhost" || g.names[h] {
		return true
	}
	ip := net.ParseIP(h)
	if ip != nil && ip.IsLoopback() {
		return true
	}
	bound := g.bound.Load()
	if bound == nil {
		return false
	}
	if *bound == h {
		return true
	}
	// Bound to every interface: any IP literal is one of ours or unroutable
	// to us. Rebinding needs a DNS name, so IP literals are safe to accept.
	b := net.ParseIP(*bound)
	return ip != nil && b != nil && b.IsUnspecified()
}

var (
	errForeignSite   = errors.New("requests a browser sends for another site are refused (Sec-Fetch-Site: cross-site or same-site); open the dashboard by its address")
	errForeignHost   = errors.New("the Host header does not name this server (add the name with --allow-host)")
	errForeignOrigin = errors.New("cross-origin requests are refused")
	errNotJSON       = errors.New("request bodies must be sent as Content-Type: application/json")
)

// checkFetchSite refuses a request a browser sent for another site (403).
func checkFetchSite(r *http.Request) (int, error) {
	for _, v := range r.Header.Values("Sec-Fetch-Site") {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "same-origin", "none":
		default: // cross-site, same-site, and anything else a browser may add
			return http.StatusForbidden, errForeignSite
		}
	}
	return 0, nil
}

// check returns the status and error refusing r, or 0 when r may proceed.
func (g *guard) check(r *http.Request) (int, error) {
	if status, err := checkFetchSite(r); err != nil {
		return status, err
	}
	if !g.hostAllowed(r.Host) {
		return http.StatusMisdirectedRequest, errForeignHost
	}
	if origins, ok := r.Header["Origin"]; ok {
		for _, o := range origins {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !g.hostAllowed(u.Host) {
				return http.StatusForbidden, errForeignOrigin
			}
		}
	}
	if hasBody(r) {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			return http.StatusUnsupportedMediaType, errNotJSON
		}
	}
	return 0, nil
}

// hasBody reports whether r carries, or by its method is meant to carry, a
// body.
func hasBody(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return true
	}
	return r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}
