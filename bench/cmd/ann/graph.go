package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/engramdb/engram/bench/dataset"
	"github.com/engramdb/engram/hnsw"
)

// buildOrLoad serves -graph: it opens the index saved in c.graph (the
// serialized index, and FILE.rows mapping its ids to base rows) when the
// file exists, so that search changes can be compared on one graph
// without rebuilding it; otherwise it builds one and saves it there. A
// loaded index reports no build figures.
func buildOrLoad(set *dataset.Set, c config) (*built, error) {
	data, err := os.ReadFile(c.graph)
	if errors.Is(err, fs.ErrNotExist) {
		b, err := build(set, c)
		if err != nil {
			return nil, err
		}
		return b, save(b, c.graph)
	}
	if err != nil {
		return nil, err
	}
	v, err := hnsw.OpenView(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.graph, err)
	}
	rows, err := os.ReadFile(c.graph + ".rows")
	if err != nil {
		return nil, err
	}
	if v.Len() != set.Base.Len() || v.Dim() != set.Base.Dim || len(rows) != 4*v.Len() {
		return nil, fmt.Errorf("%s: %d x %d with %d row bytes, the data set is %d x %d", c.graph, v.Len(), v.Dim(), len(rows), set.Base.Len(), set.Base.Dim)
	}
	// Search an Index, as a build does (its arrays on huge pages), not the
	// View over the file's bytes.
	ix, err := hnsw.FromView(v, hnsw.Config{Dim: v.Dim(), Metric: v.Metric(), M: v.M()})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.graph, err)
	}
	b := &built{ix: ix, rowOf: make([]int32, v.Len())}
	for i := range b.rowOf {
		b.rowOf[i] = int32(binary.LittleEndian.Uint32(rows[4*i:]))
	}
	return b, nil
}

func save(b *built, path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := b.ix.(*hnsw.Index).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	rows := make([]byte, 4*len(b.rowOf))
	for i, r := range b.rowOf {
		binary.LittleEndian.PutUint32(rows[4*i:], uint32(r))
	}
	return os.WriteFile(path+".rows", rows, 0o600)
}
