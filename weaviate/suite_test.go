package weaviate

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/engramdb/engram/internal/weaviatetest"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/memorytest"
)

// TestMemorySuite runs the memory layer's behavioural suite, unchanged,
// against one Weaviate node. Every subtest gets an empty backend of its own:
// the same server, a fresh class prefix.
func TestMemorySuite(t *testing.T) {
	node := weaviatetest.Start(t, 1).Nodes[0]
	var n atomic.Int64
	memorytest.Run(t, func(t *testing.T) memory.Backend {
		return openBackend(t, node.URL, Options{ClassPrefix: fmt.Sprintf("Suite%d", n.Add(1))})
	})
}
