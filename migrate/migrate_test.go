package migrate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/internal/weaviatetest"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
	"github.com/engramdb/engram/weaviate"
)

var words = strings.Fields(`tea coffee berlin shanghai meeting report daughter school dentist friday talk vector database
	billing service quarter allergy peanuts cat dog garden piano guitar marathon budget invoice holiday flight hotel
	咖啡 出差 酒店 会议 报告 女儿 学校 周五 预算 航班 假期 花园 钢琴 马拉松`)

// fill remembers n distinct memories across a few sessions and returns a
// sample of queries.
func fill(t testing.TB, s *memory.Store, n int) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	var queries []string
	for i := 0; i < n; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, "note%d", i)
		for j := 0; j < 8; j++ {
			b.WriteString(" " + words[rng.IntN(len(words))])
		}
		text := b.String()
		if _, err := s.Remember(ctx, fmt.Sprintf("s%d", i%5), text, memory.RememberOptions{Tags: []string{fmt.Sprint(i % 7)}}); err != nil {
			t.Fatal(err)
		}
		if i%(n/20+1) == 0 {
			queries = append(queries, fmt.Sprintf("note%d", i))
		}
	}
	// Something in every KV corner: a task and a conversation.
	if _, err := s.StartTask(ctx, "t1", "migrate"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddTurn(ctx, "s1", memory.Turn{Role: "user", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	return queries
}

func newStore(t testing.TB, b memory.Backend, dim int) *memory.Store {
	t.Helper()
	emb, err := lexical.New(lexical.Options{Dim: dim})
	if err != nil {
		t.Fatal(err)
	}
	s, err := memory.New(context.Background(), b, memory.Options{Embedder: emb, DedupThreshold: -1, Clock: func() time.Time { return time.Unix(1_800_000_000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func specOf(t testing.TB, s *memory.Store) memory.CollectionSpec {
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return memory.CollectionSpec{Name: st.Collection, Dim: st.Dim, Fingerprint: st.Fingerprint}
}

// checkCopy copies src to dst, interrupted once after the first batch,
// resumes, and verifies.
func checkCopy(t *testing.T, srcB, dstB memory.Backend, dim, n int) {
	ctx := context.Background()
	src := newStore(t, srcB, dim)
	queries := fill(t, src, n)
	spec := specOf(t, src)

	cctx, cancel := context.WithCancel(ctx)
	_, err := Copy(cctx, srcB, dstB, spec, Options{Batch: 100, Progress: func(done, total int) {
		if done >= 100 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted copy: %v", err)
	}
	var calls int
	rep, err := Copy(ctx, srcB, dstB, spec, Options{Batch: 100, Progress: func(done, total int) { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Memories != n || rep.Resumed != 100 || rep.Copied != n-100 || rep.Records != 2 || calls == 0 {
		t.Fatalf("resumed copy: %+v", rep)
	}
	dst := newStore(t, dstB, dim)
	v, err := Verify(ctx, src, dst, queries, memory.RecallOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || v.Compared < len(queries)/2 {
		t.Fatalf("verification: %+v", v)
	}
	// Working and short-term memory came along.
	if task, err := dst.Task(ctx, "t1"); err != nil || task.Goal != "migrate" {
		t.Fatalf("task: %+v %v", task, err)
	}
	if conv, err := dst.Context(ctx, "s1"); err != nil || len(conv.Turns) != 1 {
		t.Fatalf("conversation: %+v %v", conv, err)
	}
	t.Logf("copied %d memories, %d KV keys; %d/%d sampled recalls agree", rep.Memories, rep.KVKeys, v.Agree, v.Compared)
}

func TestCopyEngineToMemResumes(t *testing.T) {
	db, err := engine.Open(filepath.Join(t.TempDir(), "store"), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srcB := memory.NewEngineBackend(db)
	defer srcB.Close()
	checkCopy(t, srcB, memory.NewMemBackend(), 64, 500)
}

func TestCopyRefusesAMismatchedSpec(t *testing.T) {
	srcB := memory.NewMemBackend()
	spec := specOf(t, newStore(t, srcB, 64))
	spec.Fingerprint = "something else"
	if _, err := Copy(context.Background(), srcB, memory.NewMemBackend(), spec, Options{}); err == nil {
		t.Fatal("copy with a wrong spec succeeded")
	}
}

// TestMigrateToWeaviate migrates a 10k-memory engine store into a real
// Weaviate node (1k in -short).
func TestMigrateToWeaviate(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 1000
	}
	node := weaviatetest.Start(t, 1).Nodes[0]
	db, err := engine.Open(filepath.Join(t.TempDir(), "store"), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srcB := memory.NewEngineBackend(db)
	defer srcB.Close()
	dstB, err := weaviate.Open(context.Background(), node.URL, weaviate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dstB.Close()
	checkCopy(t, srcB, dstB, 256, n)
}

// TestCopyCarriesTheArchive: archived memories are in their own collection; Copy moves them and
// they restore on the destination.
func TestCopyCarriesTheArchive(t *testing.T) {
	ctx := context.Background()
	emb, err := lexical.New(lexical.Options{Dim: 32})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	opts := memory.Options{Embedder: emb, DedupThreshold: -1, Clock: func() time.Time { return now }}
	srcB := memory.NewMemBackend()
	src, err := memory.New(ctx, srcB, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range []string{"the red kite flies", "tea at five", "the boat leaks"} {
		if _, err := src.Remember(ctx, "s", tx, memory.RememberOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(365 * 24 * time.Hour)
	if res, err := src.Cleanup(ctx, memory.CleanupPolicy{}); err != nil || len(res.Memories) != 3 {
		t.Fatalf("cleanup: %d, %v", len(res.Memories), err)
	}
	dstB := memory.NewMemBackend()
	rep, err := Copy(ctx, srcB, dstB, specOf(t, src), Options{})
	if err != nil || rep.Archived != 3 {
		t.Fatalf("copy: %+v, %v", rep, err)
	}
	dst, err := memory.New(ctx, dstB, opts)
	if err != nil {
		t.Fatal(err)
	}
	if arch, err := dst.Archived(ctx); err != nil || len(arch) != 3 {
		t.Fatalf("destination archive: %d, %v", len(arch), err)
	}
	if n, err := dst.Restore(ctx); err != nil || n != 3 {
		t.Fatalf("restore on the destination: %d, %v", n, err)
	}
}

// TestCopyCarriesTheHistory: earlier versions live in their own collection; Copy moves them.
func TestCopyCarriesTheHistory(t *testing.T) {
	ctx := context.Background()
	emb, err := lexical.New(lexical.Options{Dim: 32})
	if err != nil {
		t.Fatal(err)
	}
	opts := memory.Options{Embedder: emb}
	srcB := memory.NewMemBackend()
	src, err := memory.New(ctx, srcB, opts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.Remember(ctx, "s", "the red kite flies", memory.RememberOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text := "the red kite landed"
	if _, err := src.Update(ctx, r.IDs[0], memory.UpdateOptions{Text: &text}); err != nil {
		t.Fatal(err)
	}
	dstB := memory.NewMemBackend()
	rep, err := Copy(ctx, srcB, dstB, specOf(t, src), Options{})
	if err != nil || rep.Versions != 1 {
		t.Fatalf("copy: %+v, %v", rep, err)
	}
	dst, err := memory.New(ctx, dstB, opts)
	if err != nil {
		t.Fatal(err)
	}
	if vs, err := dst.History(ctx, r.IDs[0]); err != nil || len(vs) != 1 || vs[0].Memory.Text != "the red kite flies" {
		t.Fatalf("destination history: %+v, %v", vs, err)
	}
}
