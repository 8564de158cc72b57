package weaviate

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	b := openBackend(t, cluster.Nodes[0].URL, Options{Replication: 2})
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
	kill := cluster.Nodes[1]
	kill.Stop()
	// Reads through each surviving node still see every acknowledged write.
	for _, nd := range []*weaviatetest.Node{cluster.Nodes[0], cluster.Nodes[2]} {
		nb := openBackend(t, nd.URL, Options{})
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
	if err := kill.Restart(); err != nil {
		t.Fatal(err)
	}
	// Reading through the restarted node alone finds everything.
	rb := openBackend(t, kill.URL, Options{})
	deadline := time.Now().Add(time.Minute)
	for {
		rc, err := rb.Collection(ctx, "rep")
		if err == nil {
			var got []memory.Memory
			if got, err = rc.Get(ctx, acked); err == nil && len(got) == len(acked) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted node did not catch up: %v", err)
		}
		time.Sleep(time.Second)
	}
}
