package server

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/memory"
)

// The tests of this file hold the service to what a key's rights say in every answer (issue
// 23, item 8).

// writeOnlyProbes are probes beyond routeProbes and mcpProbes for the cases a write-only key
// was seen reading through: a cleanup dry run selecting everything.
var (
	writeOnlyProbes = map[string][]probe{
		"POST /v1/cleanup": {
			{method: "POST", path: "/v1/cleanup", body: `{"dry_run":true,"older_than":"1ns","include_recalled":true}`},
			{method: "POST", path: "/v1/cleanup", body: `{"session":$session,"dry_run":true,"older_than":"1ns","include_recalled":true}`},
			{method: "POST", path: "/v1/cleanup", body: `{"older_than":"1ns","include_recalled":true}`},
		},
		"POST /v1/tasks": {{method: "POST", path: "/v1/tasks", body: `{"session":$session,"id":"mine","goal":"new work"}`}},
	}
	writeOnlyMCPProbes = map[string][]mcpProbe{
		"update_step": {{args: `{"id":$task,"name":"probe","status":"done","next":"more"}`}},
	}
)

// TestWriteOnlyKeyGetsNoStoredText: a key with the write right alone gets no stored text back
// from any route or MCP tool: every route of the route table and every tool is called with it
// against its own session, whose memories, tags, conversation and task carry a marker, and no
// answer may hold the marker (writes answer with IDs and counts only). The quoted cases: a
// cleanup dry run listed every memory's text; adding a turn answered the whole conversation,
// recording a step the task's goal, an update the memory's text.
func TestWriteOnlyKeyGetsNoStoredText(t *testing.T) {
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	secret, err := AddKey(keysFile, "writer", Scope{"alice"}, RightWrite)
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"writer": secret}
	h, err := New(Options{Store: newMemStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	leaks := func(body string) bool { return strings.Contains(body, "SECRET") }
	probed := 0
	for _, rt := range h.routes {
		probes := append(slices.Clone(routeProbes[rt.Pattern]), writeOnlyProbes[rt.Pattern]...)
		for pi, p := range probes {
			store := newMemStore(t)
			if p.disk {
				store = newStore(t)
			}
			s := newSuiteServerOn(t, store, keysFile, secrets)
			tg := seed(t, s.store, []string{"alice"})["alice"]
			code, body := s.send(t, p, tg, secret)
			s.h.jobs.wg.Wait()
			probed++
			if leaks(body) {
				t.Errorf("%s#%d (%s %s %s): %d, the write-only key got stored text: %.400s", rt.Pattern, pi, p.method, p.path, p.body, code, body)
			}
		}
	}
	for tool, probes := range mcpProbes {
		for pi, p := range append(slices.Clone(probes), writeOnlyMCPProbes[tool]...) {
			s := newSuiteServer(t, keysFile, secrets)
			tg := seed(t, s.store, []string{"alice"})["alice"]
			cs := connectMCP(t, s.url, secret)
			failed, out := suiteCallTool(t, cs, tool, tg.fill(p.args, false))
			cs.Close()
			probed++
			if leaks(out) {
				t.Errorf("MCP %s#%d (%s): failed %v, the write-only key got stored text: %.400s", tool, pi, p.args, failed, out)
			}
		}
	}
	if probed < 80 {
		t.Errorf("%d probes; the route table or the tool list shrank?", probed)
	}
}

// wideEmbedder gives every text a pseudo-random 1024-dimensional vector, so that a long text's
// chunks never merge and need several upsert batches.
type wideEmbedder struct{}

func (wideEmbedder) Dim() int            { return 1024 }
func (wideEmbedder) Fingerprint() string { return "test-wide-1024" }
func (wideEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		r := rand.New(rand.NewPCG(h.Sum64(), 7))
		v := make([]float32, 1024)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out, nil
}

// hookBackend calls before ahead of each upsert (counted from 1) into the memories collection;
// an error fails that upsert with nothing of it written.
type hookBackend struct {
	memory.Backend
	before  func(n int) error
	upserts atomic.Int32
}

type hookColl struct {
	memory.Collection
	b *hookBackend
}

func (b *hookBackend) wrap(c memory.Collection, err error) (memory.Collection, error) {
	if err != nil || c.Spec().Name != memory.DefaultCollection {
		return c, err
	}
	return hookColl{c, b}, nil
}

func (b *hookBackend) Collection(ctx context.Context, name string) (memory.Collection, error) {
	return b.wrap(b.Backend.Collection(ctx, name))
}

func (b *hookBackend) CreateCollection(ctx context.Context, spec memory.CollectionSpec) (memory.Collection, error) {
	return b.wrap(b.Backend.CreateCollection(ctx, spec))
}

func (c hookColl) Upsert(ctx context.Context, ms []memory.Memory) error {
	if err := c.b.before(int(c.b.upserts.Add(1))); err != nil {
		return err
	}
	return c.Collection.Upsert(ctx, ms)
}

// longFacts is a text of about n bytes of distinct sentences.
func longFacts(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n-64; i++ {
		fmt.Fprintf(&b, "Fact %d: the crate numbered %d holds %d blue marbles. ", i, i*7, i%97)
		if i%8 == 7 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// TestRememberTimeoutHTTP: a remember whose write outlasts the request timeout stores all its
// chunks and returns their IDs, and one whose later batch fails names the IDs it stored, over
// HTTP and MCP (issue 23: a remember that answered 504 had stored 696 of its 834 chunks, whose
// IDs were never returned).
func TestRememberTimeoutHTTP(t *testing.T) {
	text := longFacts(memory.DefaultMaxTextBytes - 1024)
	const timeout = 2 * time.Second
	serve := func(t *testing.T, before func(int) error) (*testServer, *hookBackend) {
		b := &hookBackend{Backend: memory.NewMemBackend(), before: before}
		store, err := memory.New(context.Background(), b, memory.Options{Embedder: wideEmbedder{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		return newTestServer(t, Options{Store: store, RequestTimeout: timeout}), b
	}
	stored := func(t *testing.T, s *testServer) []string {
		var ids []string
		if err := s.store.Scan(context.Background(), memory.Eq(memory.FieldSession, "alice"), func(m memory.Memory) error {
			ids = append(ids, m.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		return ids
	}
	body, _ := json.Marshal(RememberRequest{Session: "alice", Text: text})

	t.Run("timeout while writing", func(t *testing.T) {
		var sent time.Time
		s, b := serve(t, func(n int) error {
			if n == 2 { // the first batch is durable; now the deadline passes
				time.Sleep(time.Until(sent.Add(timeout + 300*time.Millisecond)))
			}
			return nil
		})
		sent = time.Now()
		code, out := rawDo(t, s, "POST", "/v1/remember", string(body))
		if n := b.upserts.Load(); n == 0 && code == http.StatusGatewayTimeout {
			t.Skipf("embedding took longer than the %v timeout here: nothing was written, the case is not reached", timeout)
		} else if n < 2 {
			t.Fatalf("%d upserts: the text should need several batches", n)
		}
		have := stored(t, s)
		var resp RememberResponse
		_ = json.Unmarshal([]byte(out), &resp)
		slices.Sort(resp.IDs)
		if code != 200 || !slices.Equal(resp.IDs, have) {
			t.Fatalf("remember: %d, %d IDs returned; the session holds %d memories (%.200s)", code, len(resp.IDs), len(have), out)
		}
	})

	t.Run("later batch fails", func(t *testing.T) {
		s, _ := serve(t, func(n int) error {
			if n%2 == 0 { // the second batch of each remember
				return fmt.Errorf("injected: %w", syscall.ENOSPC)
			}
			return nil
		})
		code, out := rawDo(t, s, "POST", "/v1/remember", string(body))
		var resp struct {
			Error     string   `json:"error"`
			StoredIDs []string `json:"stored_ids"`
		}
		if err := json.Unmarshal([]byte(out), &resp); err != nil {
			t.Fatal(err)
		}
		have := stored(t, s)
		slices.Sort(resp.StoredIDs)
		if code != http.StatusInsufficientStorage || len(have) == 0 || !slices.Equal(resp.StoredIDs, have) {
			t.Fatalf("remember: %d, %d stored IDs reported, the session holds %d (%.300s)", code, len(resp.StoredIDs), len(have), out)
		}
		// The MCP tool says the same in its error.
		cs := mcpAs(t, s, "")
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "remember", Arguments: map[string]any{"session": "bob", "text": text}})
		if err != nil {
			t.Fatal(err)
		}
		var bob []string
		_ = s.store.Scan(context.Background(), memory.Eq(memory.FieldSession, "bob"), func(m memory.Memory) error { bob = append(bob, m.ID); return nil })
		msg := toolText(res)
		if !res.IsError || len(bob) == 0 {
			t.Fatalf("MCP remember: error %v, %d stored: %.200s", res.IsError, len(bob), msg)
		}
		for _, id := range bob {
			if !strings.Contains(msg, id) {
				t.Fatalf("the MCP error does not name stored ID %s: %.300s", id, msg)
			}
		}
	})
}
