// Command reach rebuilds the HNSW graph of a collection in an engine store
// from its vectors, in store order, with the engine's default parameters,
// and reports how many live nodes the build left unreachable from the
// entry point, and what linking them (hnsw's Reconnect) cost:
//
//	go run ./bench/cmd/reach -dir STORE [-collection NAME]
//
// It prints one JSON object. The store is opened read-only in spirit (no
// writes; background compaction off) and must not be open elsewhere.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/hnsw"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "reach:", err)
		os.Exit(1)
	}
}

// Result is the command's output.
type Result struct {
	Collection  string  `json:"collection"`
	N           int     `json:"n"`
	Distinct    int     `json:"distinct_vectors"`
	BuildS      float64 `json:"build_s"`
	Unreachable int     `json:"unreachable_after_build"`
	ReconnectS  float64 `json:"reconnect_s"`
}

func run(args []string) error {
	fs := flag.NewFlagSet("reach", flag.ContinueOnError)
	dir := fs.String("dir", "", "engine store directory")
	name := fs.String("collection", "", "collection (default: the only one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("-dir is required")
	}
	db, err := engine.Open(*dir, engine.Options{CompactInterval: -1})
	if err != nil {
		return err
	}
	defer db.Close()
	cfgs := db.Collections()
	var cfg engine.CollectionConfig
	switch {
	case *name != "":
		c, err := db.Collection(*name)
		if err != nil {
			return err
		}
		cfg = c.Config()
	case len(cfgs) == 1:
		cfg = cfgs[0]
	default:
		return fmt.Errorf("the store has %d collections: name one with -collection", len(cfgs))
	}
	c, err := db.Collection(cfg.Name)
	if err != nil {
		return err
	}
	var vecs [][]float32
	distinct := map[string]bool{}
	err = c.Scan(nil, true, func(r engine.Record) bool {
		vecs = append(vecs, r.Vector)
		distinct[fmt.Sprint(r.Vector)] = true
		return true
	})
	if err != nil {
		return err
	}
	ix, err := hnsw.New(hnsw.Config{Dim: cfg.Dim, Metric: cfg.Metric, Capacity: len(vecs)})
	if err != nil {
		return err
	}
	start := time.Now()
	for _, v := range vecs {
		if _, err := ix.Insert(v); err != nil {
			return err
		}
	}
	res := Result{Collection: cfg.Name, N: len(vecs), Distinct: len(distinct), BuildS: time.Since(start).Seconds()}
	start = time.Now()
	res.Unreachable = ix.Reconnect()
	res.ReconnectS = time.Since(start).Seconds()
	return json.NewEncoder(os.Stdout).Encode(res)
}
