// Command scale runs the store-scale benchmark (package bench/scale) and
// writes its report, with the machine, load and command, to -out.
//
//	go run ./bench/cmd/scale -n 100000 -dim 1024 -sessions 10000 -out bench/results/scale.md
//
// -dir keeps the store; -measure-only then measures it again in a fresh
// process (open, recall, resident memory, bands: what a server that
// opened it would see); -peer adds python3-hnswlib's build on the same
// vectors, and -peer-only times just that.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	peer := flag.Bool("peer", false, "also time python3-hnswlib's build on the same vectors (scripts/peers/scale_build.py, /usr/bin/python3)")
	measureOnly := flag.Bool("measure-only", false, "measure the store an earlier run left in -dir (same -n, -dim, -sessions) in this fresh process: open, recall latency, resident memory, bands; no ingest")
	peerOnly := flag.Bool("peer-only", false, "time only python3-hnswlib's build on the vectors the benchmark would ingest, and print its figures as one JSON line")
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
	if *peerOnly {
		p, err := runPeer(cfg)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(struct {
			*scale.Peer
			Dim       int    `json:"dim"`
			LoadStart string `json:"load_start"`
			LoadEnd   string `json:"load_end"`
		}{p, cfg.Dim, p.LoadStart, scale.Load()})
	}
	m := scale.ThisMachine()
	m.Command = "go run ./bench/cmd/scale " + strings.Join(os.Args[1:], " ")
	m.LoadStart, m.Start = scale.Load(), time.Now()
	run := scale.Run
	if *measureOnly {
		if *dir == "" {
			return fmt.Errorf("-measure-only needs -dir")
		}
		run = scale.Measure
	}
	rep, err := run(context.Background(), cfg, os.Stderr)
	if err != nil {
		return err
	}
	if *peer && !*measureOnly {
		if rep.Peer, err = runPeer(cfg); err != nil {
			return err
		}
	}
	m.LoadEnd, m.End = scale.Load(), time.Now()
	md := rep.Markdown(m)
	if *out == "-" {
		_, err = os.Stdout.WriteString(md)
		return err
	}
	return os.WriteFile(*out, []byte(md), 0o644)
}

// runPeer writes the vectors to a temporary fvecs file and times
// python3-hnswlib's build on them.
func runPeer(cfg scale.Config) (*scale.Peer, error) {
	tmp, err := os.MkdirTemp("", "engram-scale-peer-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "base.fvecs")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := scale.WriteVectors(f, cfg); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	fmt.Fprintln(os.Stderr, "peer: python3-hnswlib build")
	p := &scale.Peer{Command: "/usr/bin/python3 scripts/peers/scale_build.py VECTORS.fvecs", LoadStart: scale.Load()}
	out, err := exec.Command("/usr/bin/python3", "scripts/peers/scale_build.py", path).Output()
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	if err := json.Unmarshal(out, p); err != nil {
		return nil, fmt.Errorf("peer: %w (output %q)", err, out)
	}
	return p, nil
}
