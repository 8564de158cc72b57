package scale

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
)

// WriteVectors writes the N vectors Run would ingest for cfg (the same
// seed, the same order) to w as fvecs (per row: int32 dimension, then the
// float32 components, little-endian), for a peer to build an index on.
func WriteVectors(w io.Writer, cfg Config) error {
	cfg.Dir = "-" // not used
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	d := newData(cfg)
	bw := bufio.NewWriterSize(w, 1<<20)
	row := make([]byte, 4+4*cfg.Dim)
	binary.LittleEndian.PutUint32(row, uint32(cfg.Dim))
	for i := range cfg.N {
		for j, x := range d.memory(i).Vector {
			binary.LittleEndian.PutUint32(row[4+4*j:], math.Float32bits(x))
		}
		if _, err := bw.Write(row); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Peer is a peer's build figures on the same vectors.
type Peer struct {
	Impl      string  `json:"impl"`
	N         int     `json:"n"`
	WallS     float64 `json:"wall_s"`
	CPUS      float64 `json:"cpu_s"`
	PerWallS  float64 `json:"per_wall_s"`
	PerCPUS   float64 `json:"per_cpu_s"`
	Command   string  `json:"-"`
	LoadStart string  `json:"-"`
}
