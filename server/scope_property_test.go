package server

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScopeProperty: over random sessions and random keys (exact names,
// prefix globs, ? globs, names of no session, "*"; random rights), a key
// never sees another scope's data through any route of the route table or
// any MCP tool, a key never changes data outside its scope, and a key
// without the write right changes nothing at all.
func TestScopeProperty(t *testing.T) {
	seedValue := uint64(time.Now().UnixNano())
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	t.Logf("seed %d (set ENGRAM_SCOPE_SEED to replay)", seedValue)
	if s := os.Getenv("ENGRAM_SCOPE_SEED"); s != "" {
		fmt.Sscan(s, &seedValue)
	}
	rng := rand.New(rand.NewPCG(seedValue, 0x5ec))
	for round := range rounds {
		sessions := randomSessions(rng)
		keysFile := filepath.Join(t.TempDir(), "keys.json")
		type key struct {
			name   string
			scope  Scope
			rights Right
		}
		var keys []key
		secrets := map[string]string{}
		for i := range 2 + rng.IntN(3) {
			k := key{name: fmt.Sprintf("k%d", i), scope: randomScope(rng, sessions), rights: Right(1 + rng.IntN(3))}
			if k.scope.All() && rng.IntN(2) == 0 {
				k.rights |= RightAdmin
			}
			sec, err := AddKey(keysFile, k.name, k.scope, k.rights)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			secrets[k.name] = sec
			keys = append(keys, k)
		}
		for _, k := range keys {
			desc := fmt.Sprintf("round %d key %s %q %s over %q", round, k.name, k.scope, k.rights, sessions)
			s := newSuiteServer(t, keysFile, secrets)
			targets := seed(t, s.store, sessions)
			before := map[string]string{}
			for _, sess := range sessions {
				before[sess] = snapshot(t, s.store, sess)
			}
			leak := func(what, out string) {
				for _, sess := range sessions {
					if !k.scope.Contains(sess) && strings.Contains(out, marker(sess)) {
						t.Errorf("%s: %s shows session %q's data: %.300s", desc, what, sess, out)
					}
				}
			}
			for _, rt := range s.h.routes {
				for _, p := range routeProbes[rt.Pattern] {
					for _, sess := range sessions {
						code, body := s.send(t, p, targets[sess], secrets[k.name])
						if code >= 500 && !p.disk { // disk probes: the in-memory backend refuses them
							t.Errorf("%s: %s %s: %d %s", desc, p.method, p.path, code, body)
						}
						leak(fmt.Sprintf("%s %s (target %q, %d)", p.method, p.path, sess, code), body)
						if p.listing {
							break
						}
					}
				}
			}
			cs := connectMCP(t, s.url, secrets[k.name])
			for tool, probes := range mcpProbes {
				for _, p := range probes {
					for _, sess := range sessions {
						_, out := suiteCallTool(t, cs, tool, targets[sess].fill(p.args, false))
						leak(fmt.Sprintf("MCP %s (target %q)", tool, sess), out)
					}
				}
			}
			cs.Close()
			for _, sess := range sessions {
				after := snapshot(t, s.store, sess)
				if after != before[sess] && (!k.scope.Contains(sess) || !k.rights.Has(RightWrite)) {
					t.Errorf("%s: session %q changed:\n%s\n->\n%s", desc, sess, before[sess], after)
				}
			}
		}
	}
}

var sessionParts = []string{"alice", "al", "bob", "team-", "team-a", "team-ab", "user/", "中文", "🎉", "a b", "a*b", "x?"}

// randomSessions returns 3 to 6 distinct session names built of parts that
// make prefixes and globs overlap.
func randomSessions(rng *rand.Rand) []string {
	seen := map[string]bool{}
	var out []string
	for n := 3 + rng.IntN(4); len(out) < n; {
		s := sessionParts[rng.IntN(len(sessionParts))]
		if rng.IntN(2) == 0 {
			s += sessionParts[rng.IntN(len(sessionParts))]
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// randomScope returns 1 to 3 patterns: a session's exact (escaped) name, a
// prefix glob, a ? glob, a name of no session, or rarely "*".
func randomScope(rng *rand.Rand, sessions []string) Scope {
	var sc Scope
	for range 1 + rng.IntN(3) {
		s := []rune(sessions[rng.IntN(len(sessions))])
		switch rng.IntN(6) {
		case 0, 1:
			sc = append(sc, escapeGlob(string(s)))
		case 2:
			sc = append(sc, escapeGlob(string(s[:1+rng.IntN(len(s))]))+"*")
		case 3:
			i := rng.IntN(len(s))
			sc = append(sc, escapeGlob(string(s[:i]))+"?"+escapeGlob(string(s[i+1:])))
		case 4:
			sc = append(sc, "nobody-"+string(s))
		default:
			if rng.IntN(3) == 0 {
				sc = append(sc, "*")
			} else {
				sc = append(sc, escapeGlob(string(s)))
			}
		}
	}
	return sc
}

func escapeGlob(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`).Replace(s)
}
