package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/quant"
)

func Example() {
	dir, _ := os.MkdirTemp("", "engram-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	db, err := engine.Open(filepath.Join(dir, "store"), engine.Options{})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	notes, err := db.CreateCollection(engine.CollectionConfig{Name: "notes", Dim: 3, Metric: quant.Cosine, Fingerprint: "toy-model"})
	if err != nil {
		panic(err)
	}
	err = notes.Upsert(ctx, []engine.Record{
		{ID: "a", Vector: []float32{1, 0, 0}, Text: "the user prefers tea", Meta: engine.Metadata{"session": engine.String("s1")}},
		{ID: "b", Vector: []float32{0, 1, 0}, Text: "the user lives in Lyon", Meta: engine.Metadata{"session": engine.String("s1")}},
		{ID: "c", Vector: []float32{0.9, 0.1, 0}, Text: "tea, no sugar", Meta: engine.Metadata{"session": engine.String("s2")}},
	})
	if err != nil {
		panic(err)
	}
	hits, err := notes.Search(ctx, engine.SearchRequest{Vector: []float32{1, 0.05, 0}, K: 2, Filter: engine.Eq("session", engine.String("s1"))})
	if err != nil {
		panic(err)
	}
	for _, h := range hits {
		fmt.Printf("%s %.2f %q\n", h.ID, h.Score, h.Record.Text)
	}
	text, _ := notes.SearchText(ctx, "tea", 5, nil)
	fmt.Println(len(text), "texts mention tea")
	// Output:
	// a 1.00 "the user prefers tea"
	// b 0.05 "the user lives in Lyon"
	// 2 texts mention tea
}
