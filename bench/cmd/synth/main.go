// Command synth writes the clustered synthetic set (package
// bench/dataset, Synthetic) as fvecs/ivecs files, so that every
// implementation in a comparison reads the same data:
//
//	go run ./bench/cmd/synth -n 200000 -dim 1024 -queries 1000 -out DIR
//
// writes DIR/base.fvecs, DIR/query.fvecs and DIR/groundtruth.ivecs (exact
// top-100 by cosine; the vectors are already L2-normalized). Files are
// written atomically with mode 0600; DIR is created 0700.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/engramdb/engram/bench/dataset"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	var cfg dataset.SyntheticConfig
	var out string
	fs.IntVar(&cfg.N, "n", 200000, "base vectors")
	fs.IntVar(&cfg.Queries, "queries", 1000, "query vectors")
	fs.IntVar(&cfg.Dim, "dim", 1024, "dimension")
	fs.IntVar(&cfg.Latent, "latent", 32, "intrinsic dimension")
	fs.IntVar(&cfg.Clusters, "clusters", 64, "mixture components")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	fs.IntVar(&cfg.K, "k", 100, "ground-truth neighbours per query")
	fs.StringVar(&out, "out", "", "output directory (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return err
	}
	start := time.Now()
	s, err := dataset.Synthetic(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "synth: %s generated with ground truth in %.1fs\n", s.Name, time.Since(start).Seconds())
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{"base.fvecs", func(w io.Writer) error { return dataset.WriteFvecs(w, s.Base) }},
		{"query.fvecs", func(w io.Writer) error { return dataset.WriteFvecs(w, s.Queries) }},
		{"groundtruth.ivecs", func(w io.Writer) error { return dataset.WriteIvecs(w, s.GroundTruth) }},
	}
	for _, f := range files {
		if err := dataset.WriteFile(filepath.Join(out, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}
