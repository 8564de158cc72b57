// Package weaviatetest starts real Weaviate servers on loopback for tests and
// benchmarks: one node, or a cluster of several joined by gossip and Raft.
// The server binary is built by scripts/weaviate.sh and named by the
// ENGRAM_WEAVIATE_BIN environment variable; without it, Start skips the test.
// Servers are stopped by PID when the test ends.
package weaviatetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// EnvBinary names the weaviate-server binary.
const EnvBinary = "ENGRAM_WEAVIATE_BIN"

// Node is one running (or stopped) Weaviate server.
type Node struct {
	Name string
	// URL is the REST endpoint, http://127.0.0.1:PORT.
	URL string

	bin, dataDir string
	env          []string
	httpPort     int
	cmd          *exec.Cmd
	logFile      *os.File
	exited       chan struct{}
}

// Cluster is a set of nodes started together.
type Cluster struct {
	Nodes []*Node
	tb    testing.TB
}

// Binary returns the server binary from the environment, or skips tb.
func Binary(tb testing.TB) string {
	bin := os.Getenv(EnvBinary)
	if bin == "" {
		tb.Skipf("no Weaviate server: set %s (scripts/weaviate.sh builds one; .ci/run always does)", EnvBinary)
	}
	if _, err := os.Stat(bin); err != nil {
		tb.Fatalf("%s=%s: %v", EnvBinary, bin, err)
	}
	return bin
}

// Start starts n nodes (1 for a single node) and waits until every one is
// ready. They are stopped when tb ends. Ports are chosen below the kernel's
// ephemeral range, yet another process can still take one between the check
// and Weaviate's bind (go test runs packages side by side), so a start that
// fails with "address already in use" is retried on fresh ports.
func Start(tb testing.TB, n int) *Cluster {
	tb.Helper()
	bin := Binary(tb)
	root := tb.TempDir()
	for attempt := 1; ; attempt++ {
		c, err := launch(tb, bin, filepath.Join(root, fmt.Sprint(attempt)), n)
		if err == nil {
			tb.Cleanup(c.StopAll)
			return c
		}
		c.StopAll()
		if !strings.Contains(err.Error(), "address already in use") || attempt == 5 {
			tb.Fatal(err)
		}
		tb.Logf("weaviate start attempt %d lost a port race; retrying on other ports", attempt)
	}
}

// launch starts n nodes under root on freshly chosen ports and waits until
// each is ready; on error the caller stops whatever did start.
func launch(tb testing.TB, bin, root string, n int) (*Cluster, error) {
	ports := pickPorts(tb, 3*n) // per node: http+grpc, gossip+data, raft+raft rpc
	var raftJoin []string
	for i := 0; i < n; i++ {
		raftJoin = append(raftJoin, fmt.Sprintf("node%d:%d", i+1, ports[3*i+2]))
	}
	c := &Cluster{tb: tb}
	for i := 0; i < n; i++ {
		httpPort, gossip, raft := ports[3*i], ports[3*i+1], ports[3*i+2]
		nd := &Node{Name: fmt.Sprintf("node%d", i+1), URL: fmt.Sprintf("http://127.0.0.1:%d", httpPort), bin: bin,
			dataDir: filepath.Join(root, fmt.Sprintf("node%d", i+1)), httpPort: httpPort}
		nd.env = append(os.Environ(),
			"PERSISTENCE_DATA_PATH="+nd.dataDir,
			"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true",
			"DEFAULT_VECTORIZER_MODULE=none",
			"API_BASED_MODULES_DISABLED=true",
			"DISABLE_TELEMETRY=true",
			"CLUSTER_HOSTNAME="+nd.Name,
			"CLUSTER_IN_LOCALHOST=true",
			"CLUSTER_BIND_ADDR=127.0.0.1",
			"CLUSTER_ADVERTISE_ADDR=127.0.0.1",
			fmt.Sprintf("CLUSTER_GOSSIP_BIND_PORT=%d", gossip),
			fmt.Sprintf("CLUSTER_DATA_BIND_PORT=%d", gossip+1),
			fmt.Sprintf("RAFT_PORT=%d", raft),
			fmt.Sprintf("RAFT_INTERNAL_RPC_PORT=%d", raft+1),
			fmt.Sprintf("RAFT_BOOTSTRAP_EXPECT=%d", n),
			"RAFT_JOIN="+strings.Join(raftJoin, ","),
			fmt.Sprintf("GRPC_PORT=%d", httpPort+1),
			"GO_PROFILING_DISABLE=true",
			fmt.Sprintf("GO_PROFILING_PORT=%d", httpPort+2),
			"LOG_LEVEL=warning",
			"QUERY_MAXIMUM_RESULTS=10000",
		)
		if i > 0 {
			nd.env = append(nd.env, fmt.Sprintf("CLUSTER_JOIN=127.0.0.1:%d", ports[1]))
		}
		c.Nodes = append(c.Nodes, nd)
	}
	for _, nd := range c.Nodes {
		if err := nd.start(); err != nil {
			return c, err
		}
	}
	for _, nd := range c.Nodes {
		if err := nd.WaitReady(3 * time.Minute); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (nd *Node) start() error {
	if err := os.MkdirAll(nd.dataDir, 0o700); err != nil {
		return err
	}
	log, err := os.OpenFile(nd.dataDir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(nd.bin, "--scheme", "http", "--host", "127.0.0.1", "--port", fmt.Sprint(nd.httpPort))
	cmd.Env = nd.env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", nd.Name, err)
	}
	nd.cmd, nd.logFile, nd.exited = cmd, log, make(chan struct{})
	go func() { cmd.Wait(); close(nd.exited) }()
	return nil
}

// WaitReady polls the node's readiness endpoint.
func (nd *Node) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-nd.exited:
			return fmt.Errorf("%s exited while starting; log: %s", nd.Name, nd.tail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, nd.URL+"/v1/.well-known/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after %v; log: %s", nd.Name, timeout, nd.tail())
}

func (nd *Node) tail() string {
	data, _ := os.ReadFile(nd.dataDir + ".log")
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return string(data)
}

// Stop kills the node (SIGKILL by PID, a crash as far as it knows) and
// waits for it to exit. Its data stays for Restart.
func (nd *Node) Stop() {
	if nd.cmd == nil {
		return
	}
	syscall.Kill(-nd.cmd.Process.Pid, syscall.SIGKILL)
	<-nd.exited
	nd.logFile.Close()
	nd.cmd = nil
}

// Restart starts a stopped node on the same ports and data and waits until
// it is ready.
func (nd *Node) Restart() error {
	if err := nd.start(); err != nil {
		return err
	}
	return nd.WaitReady(3 * time.Minute)
}

// StopAll stops every node.
func (c *Cluster) StopAll() {
	for _, nd := range c.Nodes {
		nd.Stop()
	}
}

// The ports tried: below Linux's default ephemeral range (32768-60999), so
// the kernel does not hand them to outgoing connections of other tests.
const portLow, portHigh = 12000, 32000

// pickPorts chooses a start's ports; a test replaces it to lose the race.
var pickPorts = freePortPairs

// freePortPairs returns n port numbers p such that p and p+1 are both free
// (Weaviate derives a second port from each one it is given).
func freePortPairs(tb testing.TB, n int) []int {
	var out []int
	used := map[int]bool{}
	for tries := 0; len(out) < n; tries++ {
		if tries > 10000 {
			tb.Fatal("no free port pairs on loopback")
		}
		p := portLow + 2*rand.IntN((portHigh-portLow)/2)
		if used[p] || used[p+1] || used[p+2] || !free(p) || !free(p+1) || !free(p+2) {
			continue
		}
		used[p], used[p+1], used[p+2] = true, true, true
		out = append(out, p)
	}
	return out
}

func free(port int) bool {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
