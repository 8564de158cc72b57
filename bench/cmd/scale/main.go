// Command scale runs the store-scale benchmark (package bench/scale) and
// writes its report, with the machine, load and command, to -out.
//
//	go run ./bench/cmd/scale -n 100000 -dim 1024 -sessions 10000 -out bench/results/scale.md
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/engramdb/engram/bench/scale"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg scale.Config
	flag.IntVar(&cfg.N, "n", 100_000, "memories")
	flag.IntVar(&cfg.Dim, "dim", 1024, "vector dimension")
	flag.IntVar(&cfg.Sessions, "sessions", 10_000, "sessions")
	flag.IntVar(&cfg.Clusters, "clusters", 1000, "mixture components")
	flag.IntVar(&cfg.Queries, "queries", 500, "timed recalls through the memory layer")
	flag.IntVar(&cfg.BandQueries, "band-queries", 100, "searches per selectivity band")
	dir := flag.String("dir", "", "store directory (default: a temporary one, removed after)")
	out := flag.String("out", "bench/results/scale.md", "report file (- for stdout)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	cfg.Dir = *dir
	if cfg.Dir == "" {
		tmp, err := os.MkdirTemp("", "engram-scale-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		cfg.Dir = tmp + "/store"
	}
	m := scale.ThisMachine()
	m.Command = "go run ./bench/cmd/scale " + strings.Join(os.Args[1:], " ")
	m.LoadStart, m.Start = scale.Load(), time.Now()
	rep, err := scale.Run(context.Background(), cfg, os.Stderr)
	if err != nil {
		return err
	}
	m.LoadEnd, m.End = scale.Load(), time.Now()
	md := rep.Markdown(m)
	if *out == "-" {
		_, err = os.Stdout.WriteString(md)
		return err
	}
	return os.WriteFile(*out, []byte(md), 0o644)
}
