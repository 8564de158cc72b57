package python_test

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

// TestConcurrencyTextsStayApart: tests/test_async.py's concurrency test
// remembers 40 texts "Kite" + six random hex words in one session and
// expects 40 memories, so no two may reach the server's merge threshold
// with the built-in embedder. Its first texts, "Kite <hex> flies over hill
// <hex>.", shared four words and sat at cosine 0.68 with a tail to 0.85 from
// hash collisions: about one run in 60 merged two and failed; three hex
// words still had a tail to 0.75. This measures the three shapes over the
// same 20,000 seeded pairs each.
func TestConcurrencyTextsStayApart(t *testing.T) {
	e, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// maxCos embeds pairs of "Kite" + words, each H a random hex word.
	maxCos := func(words string) float64 {
		r := rand.New(rand.NewPCG(1, 2))
		hexWord := func() string {
			var b [16]byte
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return hex.EncodeToString(b[:])
		}
		build := func() string {
			var out []string
			for _, w := range strings.Fields(words) {
				if w == "H" {
					w = hexWord()
				}
				out = append(out, w)
			}
			return "Kite " + strings.Join(out, " ") + "."
		}
		best := -1.0
		for range 20000 {
			vs, err := e.Embed(context.Background(), []string{build(), build()})
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
	now := maxCos("H H H H H H")
	three := maxCos("H H H")
	first := maxCos("H flies over hill H")
	t.Logf("highest cosine over 20,000 pairs: %.3f now, %.3f with three hex words, %.3f with the first texts (merge at %.2f)",
		now, three, first, memory.DefaultDedupThreshold)
	if now > memory.DefaultDedupThreshold-0.3 {
		t.Errorf("the test's texts come within %.3f of the merge threshold", memory.DefaultDedupThreshold-now)
	}
}
