package server

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestLoad drives the service on loopback with 16 concurrent clients doing a
// mix of remembers (1 in 4) and recalls for a bounded time, then checks that
// nothing failed and every acknowledged remember is recallable. It reports
// requests/s and latency percentiles. ENGRAM_LOAD_SECONDS sets the duration
// (default 5 s, 1 s with -short; the committed figures use 30).
func TestLoad(t *testing.T) {
	seconds := 5.0
	if testing.Short() {
		seconds = 1
	}
	if v := os.Getenv("ENGRAM_LOAD_SECONDS"); v != "" {
		var err error
		if seconds, err = strconv.ParseFloat(v, 64); err != nil || seconds <= 0 {
			t.Fatalf("ENGRAM_LOAD_SECONDS=%q", v)
		}
	}
	const clients = 16
	s := newTestServer(t, Options{})
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))

	type acked struct{ session, token, id string }
	var (
		mu        sync.Mutex
		latencies []time.Duration
		acks      []acked
		failures  []string
		wg        sync.WaitGroup
	)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			session := fmt.Sprintf("client%d", c%4)
			var mine []acked
			var lat []time.Duration
			var fails []string
			for i := 0; time.Now().Before(deadline); i++ {
				start := time.Now()
				var code int
				if i%4 == 0 || len(mine) == 0 {
					token := fmt.Sprintf("k%dq%d", c, i)
					var rem RememberResponse
					code = s.do("POST", "/v1/remember", RememberRequest{Session: session, Text: randomFact(rng, token)}, &rem)
					if code == http.StatusOK && len(rem.IDs) == 1 {
						mine = append(mine, acked{session, token, rem.IDs[0]})
					}
				} else {
					q := mine[rng.IntN(len(mine))]
					var rec RecallResponse
					code = s.do("POST", "/v1/recall", RecallRequest{Session: q.session, Query: q.token, K: 5, NoTouch: true}, &rec)
				}
				lat = append(lat, time.Since(start))
				if code != http.StatusOK {
					fails = append(fails, fmt.Sprintf("client %d request %d: status %d", c, i, code))
				}
			}
			mu.Lock()
			latencies = append(latencies, lat...)
			acks = append(acks, mine...)
			failures = append(failures, fails...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failed requests, first: %s", len(failures), failures[0])
	}
	slices.Sort(latencies)
	pct := func(p float64) time.Duration { return latencies[int(p*float64(len(latencies)-1))] }
	t.Logf("load: %d clients, %.0f s: %d requests (%d remembers), %.0f req/s, p50 %v, p99 %v",
		clients, seconds, len(latencies), len(acks), float64(len(latencies))/seconds, pct(0.50), pct(0.99))

	// Every acknowledged remember is there and recallable by its unique token
	// (keyword mode: in hybrid mode a memory found by one list only can tie
	// with another found by the other list only, under RRF).
	for _, a := range acks {
		var rec RecallResponse
		if code := s.do("POST", "/v1/recall", RecallRequest{Session: a.session, Query: a.token, K: 1, Mode: "keyword", NoTouch: true}, &rec); code != 200 {
			t.Fatalf("recall %s: status %d", a.token, code)
		}
		if len(rec.Results) != 1 || rec.Results[0].ID != a.id {
			t.Fatalf("acknowledged memory %s (%s) not recalled: %+v", a.id, a.token, rec.Results)
		}
	}
}

// randomFact is a sentence of random words around token, so that no two
// facts are near-duplicates (which Remember would merge).
func randomFact(rng *rand.Rand, token string) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := []byte(token)
	for w := 0; w < 10; w++ {
		b = append(b, ' ')
		for n := 4 + rng.IntN(6); n > 0; n-- {
			b = append(b, letters[rng.IntN(len(letters))])
		}
	}
	return string(b) + "."
}
