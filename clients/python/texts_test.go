package python_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

// TestConcurrencyTextsStayApart: tests/test_async.py's concurrency test
// remembers 40 texts "Kite <hex> <hex> <hex>." in one session and expects
// 40 memories, so no two may reach the server's merge threshold with the
// built-in embedder. Its earlier texts, "Kite <hex> flies over hill <hex>.",
// shared four words and sat at cosine 0.68 with a tail to 0.85 from hash
// collisions: about one run in 60 merged two and failed. This measures both
// shapes over 20,000 pairs each.
func TestConcurrencyTextsStayApart(t *testing.T) {
	e, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := func() string { b := make([]byte, 16); _, _ = rand.Read(b); return hex.EncodeToString(b) }
	maxCos := func(text func() string) float64 {
		best := -1.0
		for range 20000 {
			vs, err := e.Embed(context.Background(), []string{text(), text()})
			if err != nil {
				t.Fatal(err)
			}
			var dot float64
			for i := range vs[0] {
				dot += float64(vs[0][i]) * float64(vs[1][i])
			}
			best = max(best, dot)
		}
		return best
	}
	now := maxCos(func() string { return "Kite " + h() + " " + h() + " " + h() + "." })
	before := maxCos(func() string { return "Kite " + h() + " flies over hill " + h() + "." })
	t.Logf("highest cosine over 20,000 pairs: %.3f now, %.3f with the earlier texts (merge at %.2f)", now, before, memory.DefaultDedupThreshold)
	if now > memory.DefaultDedupThreshold-0.2 {
		t.Errorf("the test's texts come within %.3f of the merge threshold", memory.DefaultDedupThreshold-now)
	}
}
