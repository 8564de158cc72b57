package weaviate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/engramdb/engram/internal/weaviatetest"
	"github.com/engramdb/engram/memory"
)

// unit returns a deterministic unit vector of dim dimensions for seed.
func unit(dim, seed int) []float32 {
	v := make([]float32, dim)
	var n float64
	for i := range v {
		x := math.Sin(float64(seed*7919+i*104729) * 0.001)
		v[i] = float32(x)
		n += x * x
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v
}

func openBackend(t testing.TB, url string, opts Options) *Backend {
	t.Helper()
	b, err := Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestBackendOnSingleNode(t *testing.T) {
	node := weaviatetest.Start(t, 1).Nodes[0]
	ctx := context.Background()
	b := openBackend(t, node.URL, Options{})

	if _, err := b.Collection(ctx, "mem"); !errors.Is(err, memory.ErrNoCollection) {
		t.Fatalf("missing collection: %v", err)
	}
	spec := memory.CollectionSpec{Name: "mem", Dim: 8, Fingerprint: "test/v1"}
	c, err := b.CreateCollection(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := b.CreateCollection(ctx, spec); err != nil || again.Spec() != spec {
		t.Fatalf("re-create: %v", err)
	}
	if _, err := b.CreateCollection(ctx, memory.CollectionSpec{Name: "mem", Dim: 16, Fingerprint: "other"}); err == nil {
		t.Fatal("a second spec for the same name was accepted")
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	ms := []memory.Memory{
		{ID: "a1", Session: "alice", Text: "Alice likes green tea", Source: "chat", Tags: []string{"drinks"}, Importance: 0.7, Created: t0, Updated: t0, Vector: unit(8, 1)},
		{ID: "a2", Session: "alice", Text: "Alice 的女儿今年上小学", Importance: 0.5, Created: t0, Updated: t0.Add(time.Hour), Vector: unit(8, 2)},
		{ID: "b1", Session: "bob", Text: "Bob drinks coffee", Importance: 0.5, Created: t0, Updated: t0, AccessCount: 3, LastAccess: t0, Vector: unit(8, 3)},
		{ID: "e1", Session: "", Text: "a memory of the default session", Importance: 0.5, Created: t0, Updated: t0, Vector: unit(8, 4)},
	}
	if err := c.Upsert(ctx, ms); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, []string{"b1", "zz", "a1"})
	if err != nil || len(got) != 2 || got[0].ID != "b1" || got[1].ID != "a1" {
		t.Fatalf("get: %v %+v", err, got)
	}
	// Everything round-trips exactly: times to the nanosecond, tags, vectors.
	if !got[1].Created.Equal(t0) || got[1].Source != "chat" || !slices.Equal(got[1].Tags, []string{"drinks"}) || !slices.Equal(got[1].Vector, ms[0].Vector) || got[0].AccessCount != 3 || !got[0].LastAccess.Equal(t0) {
		t.Fatalf("round trip: %+v", got)
	}

	alice := memory.Eq(memory.FieldSession, "alice")
	hits, err := c.SearchVector(ctx, unit(8, 2), 3, alice)
	if err != nil || len(hits) != 2 || hits[0].Memory.ID != "a2" || hits[0].Score < 0.999 {
		t.Fatalf("vector search: %v %+v", err, hits)
	}
	hits, err = c.SearchText(ctx, "女儿 小学", 5, alice)
	if err != nil || len(hits) != 1 || hits[0].Memory.ID != "a2" || hits[0].Score <= 0 {
		t.Fatalf("CJK keyword search: %v %+v", err, hits)
	}
	hits, err = c.SearchText(ctx, "coffee", 5, alice)
	if err != nil || len(hits) != 0 {
		t.Fatalf("keyword search leaked across sessions: %+v", hits)
	}
	if hits, _ = c.SearchText(ctx, "default session", 5, memory.Eq(memory.FieldSession, "")); len(hits) != 1 || hits[0].Memory.ID != "e1" {
		t.Fatalf("empty session: %+v", hits)
	}
	// A filter Weaviate cannot express runs on the client.
	noTags := memory.And(alice, memory.Not(memory.Exists(memory.FieldTag)))
	if hits, _ = c.SearchVector(ctx, unit(8, 1), 5, noTags); len(hits) != 1 || hits[0].Memory.ID != "a2" {
		t.Fatalf("client-side filter: %+v", hits)
	}
	if n, err := c.Count(ctx, alice); err != nil || n != 2 {
		t.Fatalf("count: %d %v", n, err)
	}
	if n, _ := c.Count(ctx, memory.TimeRange(memory.FieldUpdated, t0.Add(time.Minute), time.Time{})); n != 1 {
		t.Fatalf("time range count: %d", n)
	}
	if err := c.Touch(ctx, []string{"a1", "gone"}, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ = c.Get(ctx, []string{"a1"}); got[0].AccessCount != 1 || !got[0].LastAccess.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("touch: %+v", got[0])
	}
	if n, _ := c.Count(ctx, memory.Exists(memory.FieldLastAccess)); n != 2 {
		t.Fatalf("exists last_access: %d", n)
	}
	var scanned []string
	if err := c.Scan(ctx, memory.Not(memory.Eq(memory.FieldSession, "alice")), func(m memory.Memory) error {
		scanned = append(scanned, m.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(scanned)
	if !slices.Equal(scanned, []string{"b1", "e1"}) {
		t.Fatalf("scan: %v", scanned)
	}
	if n, err := c.Delete(ctx, []string{"b1", "nope"}); err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	if n, err := c.DeleteWhere(ctx, alice); err != nil || n != 2 {
		t.Fatalf("delete where: %d %v", n, err)
	}
	if n, _ := c.Count(ctx, nil); n != 1 {
		t.Fatalf("left: %d", n)
	}
	if err := c.Upsert(ctx, []memory.Memory{{ID: "bad", Vector: unit(4, 1)}}); !errors.Is(err, memory.ErrInvalidInput) {
		t.Fatalf("wrong dimension: %v", err)
	}
	if err := b.DropCollection(ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Collection(ctx, "mem"); !errors.Is(err, memory.ErrNoCollection) {
		t.Fatalf("after drop: %v", err)
	}

	kv := b.KV()
	for _, k := range []string{"task/2", "task/1", "conv/a", "task/10"} {
		if err := kv.Put(k, []byte("v:"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok, err := kv.Get("task/1"); err != nil || !ok || string(v) != "v:task/1" {
		t.Fatalf("kv get: %q %v %v", v, ok, err)
	}
	if _, ok, _ := kv.Get("missing"); ok {
		t.Fatal("missing key found")
	}
	var keys []string
	kv.Scan("task/", func(k string, v []byte) error { keys = append(keys, k); return nil })
	if !slices.Equal(keys, []string{"task/1", "task/10", "task/2"}) {
		t.Fatalf("kv scan: %v", keys)
	}
	if err := kv.Delete("task/1"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete("task/1"); err != nil {
		t.Fatal("deleting a missing key failed")
	}
}

// TestReplicatedClusterSurvivesANode runs three nodes with replication
// factor 2: with one node stopped, recalls still succeed and every
// acknowledged write is present; the node catches up after a restart.
func TestReplicatedClusterSurvivesANode(t *testing.T) {
	if testing.Short() {
		t.Skip("three-node cluster: skipped in -short")
	}
	cluster := weaviatetest.Start(t, 3)
	ctx := context.Background()
	// One shard with two replicas: two of the three nodes hold all the data.
	b := openBackend(t, cluster.Nodes[0].URL, Options{Replication: 2, Shards: 1})
	c, err := b.CreateCollection(ctx, memory.CollectionSpec{Name: "rep", Dim: 8, Fingerprint: "f"})
	if err != nil {
		t.Fatal(err)
	}
	var acked []string
	for batch := 0; batch < 10; batch++ {
		var ms []memory.Memory
		for i := 0; i < 20; i++ {
			n := batch*20 + i
			ms = append(ms, memory.Memory{ID: fmt.Sprintf("m%03d", n), Session: fmt.Sprintf("s%d", n%3), Text: fmt.Sprintf("fact %d", n),
				Importance: 0.5, Created: time.Unix(int64(n), 0), Updated: time.Unix(int64(n), 0), Vector: unit(8, n)})
		}
		if err := c.Upsert(ctx, ms); err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			acked = append(acked, m.ID)
		}
	}
	holders, err := replicaHolders(ctx, b, "rep")
	if err != nil || len(holders) != 2 {
		t.Fatalf("replica holders %v (%v)", holders, err)
	}
	// Stop a replica holder; not the Raft leader when that can be avoided,
	// so the test is about data replication, not schema leader election.
	victim, leader := holders[1], raftLeader(ctx, b)
	if leader == victim {
		victim = holders[0]
	}
	t.Logf("replicas on %v, Raft leader %q: stopping %s", holders, leader, victim)
	var kill *weaviatetest.Node
	var alive []*weaviatetest.Node
	for _, nd := range cluster.Nodes {
		if nd.Name == victim {
			kill = nd
		} else {
			alive = append(alive, nd)
		}
	}
	kill.Stop()
	// Reads through each surviving node still see every acknowledged write.
	for _, nd := range alive {
		nb := openEventually(t, nd.URL, Options{})
		nc, err := nb.Collection(ctx, "rep")
		if err != nil {
			t.Fatal(err)
		}
		got, err := nc.Get(ctx, acked)
		if err != nil || len(got) != len(acked) {
			t.Fatalf("via %s with %s down: %d of %d acknowledged memories (%v)", nd.Name, kill.Name, len(got), len(acked), err)
		}
		hits, err := nc.SearchVector(ctx, unit(8, 42), 5, memory.Eq(memory.FieldSession, "s0"))
		if err != nil || len(hits) == 0 || hits[0].Memory.ID != "m042" {
			t.Fatalf("recall via %s with %s down: %v %+v", nd.Name, kill.Name, err, hits)
		}
	}
	// Writes acknowledged by one replica while the node is down ...
	wb := openEventually(t, alive[0].URL, Options{WriteConsistency: "ONE"})
	wc, err := wb.Collection(ctx, "rep")
	if err != nil {
		t.Fatal(err)
	}
	var during []memory.Memory
	for n := 200; n < 260; n++ {
		during = append(during, memory.Memory{ID: fmt.Sprintf("m%03d", n), Session: "s9", Text: fmt.Sprintf("fact %d", n),
			Importance: 0.5, Created: time.Unix(int64(n), 0), Updated: time.Unix(int64(n), 0), Vector: unit(8, n)})
		acked = append(acked, during[len(during)-1].ID)
	}
	if err := wc.Upsert(ctx, during); err != nil {
		t.Fatalf("write with %s down at consistency ONE: %v", kill.Name, err)
	}
	if err := kill.Restart(); err != nil {
		t.Fatal(err)
	}
	// ... reach the restarted node too: reading through it alone, at
	// consistency ONE, eventually finds everything.
	// The restarted node may answer slowly while it rejoins: retry until it serves.
	var rb *Backend
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var got []memory.Memory
		b, err := Open(ctx, kill.URL, Options{Timeout: 15 * time.Second})
		if err == nil {
			rb = b
			var rc memory.Collection
			if rc, err = b.Collection(ctx, "rep"); err == nil {
				if got, err = rc.Get(ctx, acked); err == nil && len(got) == len(acked) {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted node did not catch up: %d of %d memories, %v", len(got), len(acked), err)
		}
		time.Sleep(time.Second)
	}
	// The restarted node's own replica holds every object, the ones written
	// while it was down included.
	// (The check can fail: the node without a replica lacks them all.)
	for _, nd := range alive {
		if !slices.Contains(holders, nd.Name) {
			if m, err := missingOnNode(ctx, rb, "rep", nd.Name, acked[:5]); err == nil && len(m) == 0 {
				t.Fatalf("node_name reads on %s, which holds no replica, found every object", nd.Name)
			}
		}
	}
	deadline = time.Now().Add(2 * time.Minute)
	for {
		missing, err := missingOnNode(ctx, rb, "rep", kill.Name, acked)
		if err == nil && len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's replica did not catch up: %d objects missing (%v)", kill.Name, len(missing), err)
		}
		time.Sleep(2 * time.Second)
	}
}

// openEventually opens a backend on url, retrying with short timeouts for up
// to two minutes: right after a node of the cluster stops, the others may
// stall until gossip and Raft notice.
func openEventually(t *testing.T, url string, opts Options) *Backend {
	t.Helper()
	opts.Timeout = 15 * time.Second
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, err := Open(context.Background(), url, opts)
		if err == nil {
			t.Cleanup(func() { b.Close() })
			return b
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
}

// raftLeader returns the name of the cluster's Raft leader, or "" when the
// statistics do not say.
func raftLeader(ctx context.Context, b *Backend) string {
	var resp struct {
		Statistics []struct {
			LeaderID string `json:"leaderId"`
		} `json:"statistics"`
	}
	if err := b.c.do(ctx, "GET", "/v1/cluster/statistics", nil, nil, &resp); err != nil {
		return ""
	}
	for _, st := range resp.Statistics {
		if st.LeaderID != "" {
			return st.LeaderID
		}
	}
	return ""
}

// replicaHolders returns the nodes holding a shard of collection name.
func replicaHolders(ctx context.Context, b *Backend, name string) ([]string, error) {
	var resp struct {
		Nodes []struct {
			Name   string            `json:"name"`
			Shards []json.RawMessage `json:"shards"`
		} `json:"nodes"`
	}
	if err := b.c.do(ctx, "GET", "/v1/nodes/"+b.className(name), url.Values{"output": {"verbose"}}, nil, &resp); err != nil {
		return nil, err
	}
	var out []string
	for _, nd := range resp.Nodes {
		if len(nd.Shards) > 0 {
			out = append(out, nd.Name)
		}
	}
	return out, nil
}

// missingOnNode returns the IDs whose object node's local replica lacks.
func missingOnNode(ctx context.Context, b *Backend, name, node string, ids []string) ([]string, error) {
	class := b.className(name)
	var missing []string
	for _, id := range ids {
		err := b.c.do(ctx, "GET", "/v1/objects/"+class+"/"+objectID(class, id), url.Values{"node_name": {node}}, nil, nil)
		if isStatus(err, 404) {
			missing = append(missing, id)
		} else if err != nil {
			return nil, err
		}
	}
	return missing, nil
}
