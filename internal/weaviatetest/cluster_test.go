package weaviatetest

import (
	"fmt"
	"net"
	"net/http"
	"testing"
)

// TestStartRetriesLostPortRace holds the first chosen HTTP port open, as
// another test's connection would after the free check, and expects Start to
// come up on other ports instead of failing (CI once failed this way).
func TestStartRetriesLostPortRace(t *testing.T) {
	Binary(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	busy := held.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPorts = func(tb testing.TB, n int) []int {
		calls++
		ports := freePortPairs(tb, n)
		if calls == 1 {
			ports[0] = busy
		}
		return ports
	}
	defer func() { pickPorts = freePortPairs }()

	c := Start(t, 1)
	if calls < 2 {
		t.Fatalf("Start chose ports %d time(s); want a retry after the busy port", calls)
	}
	if c.Nodes[0].URL == fmt.Sprintf("http://127.0.0.1:%d", busy) {
		t.Fatalf("node runs on the busy port %d", busy)
	}
	resp, err := http.Get(c.Nodes[0].URL + "/v1/.well-known/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ready: %s", resp.Status)
	}
}
