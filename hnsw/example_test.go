package hnsw_test

import (
	"bytes"
	"fmt"

	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/quant"
)

func Example() {
	ix, err := hnsw.New(hnsw.Config{Dim: 3, Metric: quant.Cosine, Seed: 1})
	if err != nil {
		panic(err)
	}
	for _, v := range [][]float32{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}} {
		if _, err := ix.Insert(v); err != nil {
			panic(err)
		}
	}
	res, _ := ix.Search([]float32{0.9, 0.8, 0}, 2, hnsw.SearchOptions{})
	fmt.Println("index:", res[0].ID, res[1].ID)

	// Only even ids.
	even := hnsw.NewBitset(ix.Len())
	_ = even.Set(0)
	_ = even.Set(2)
	res, _ = ix.Search([]float32{0.9, 0.8, 0}, 1, hnsw.SearchOptions{Filter: even})
	fmt.Println("filtered:", res[0].ID)

	// Serialize and search the bytes in place.
	var buf bytes.Buffer
	if _, err := ix.WriteTo(&buf); err != nil {
		panic(err)
	}
	v, err := hnsw.OpenView(buf.Bytes())
	if err != nil {
		panic(err)
	}
	res, _ = v.Search([]float32{0, 0.1, 1}, 1, hnsw.SearchOptions{})
	fmt.Println("view:", res[0].ID, v.Len())
	// Output:
	// index: 3 0
	// filtered: 0
	// view: 2 4
}
