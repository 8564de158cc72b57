package chroma

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// The files of a persisted hnswlib index (chroma-core/hnswlib's hnswalg.h, PERSISTENCE_VERSION
// 1), one directory per Chroma vector segment, named by the segment's ID:
//
//	header.bin        HNSWHeaderSize bytes: int32 version, then the index's sizes (HNSWHeader)
//	data_level0.bin   MaxElements elements of SizePerElement bytes: at OffsetLevel0 a uint32
//	                  whose low 16 bits count the level-0 links and whose byte 2 has bit 0 set
//	                  for a deleted element, the links; at OffsetData the vector (Dim float32);
//	                  at LabelOffset the label (uint64)
//	length.bin        MaxElements float32: each vector's norm before a cosine index
//	                  normalized it (unset for l2 and ip)
//	link_lists.bin    the upper levels' links (the graph; not needed for the vectors)
//
// All little-endian. The first ElementCount elements are in use.
const (
	HNSWVersion    = 1
	HNSWHeaderSize = 100
	// maxElementBytes bounds SizePerElement (1M dimensions and their links).
	maxElementBytes = 1 << 23
	deleteMark      = 0x01
)

// HNSWHeader is header.bin.
type HNSWHeader struct {
	Version        int32
	OffsetLevel0   uint64
	MaxElements    uint64
	ElementCount   uint64
	SizePerElement uint64
	LabelOffset    uint64
	OffsetData     uint64
	MaxLevel       int32
	EnterPoint     uint32
	MaxM           uint64
	MaxM0          uint64
	M              uint64
	Mult           float64
	EfConstruction uint64
}

// Dim is the vectors' dimension: the float32s between OffsetData and LabelOffset.
func (h HNSWHeader) Dim() int { return int((h.LabelOffset - h.OffsetData) / 4) }

// ParseHNSWHeader decodes and checks header.bin: the version, and offsets that lie inside an
// element in hnswlib's order. It never panics on malformed input.
func ParseHNSWHeader(b []byte) (HNSWHeader, error) {
	var h HNSWHeader
	if len(b) != HNSWHeaderSize {
		return h, fmt.Errorf("hnsw header.bin: %d bytes, want %d", len(b), HNSWHeaderSize)
	}
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	h.Version = int32(binary.LittleEndian.Uint32(b[0:]))
	h.OffsetLevel0 = u64(4)
	h.MaxElements = u64(12)
	h.ElementCount = u64(20)
	h.SizePerElement = u64(28)
	h.LabelOffset = u64(36)
	h.OffsetData = u64(44)
	h.MaxLevel = int32(binary.LittleEndian.Uint32(b[52:]))
	h.EnterPoint = binary.LittleEndian.Uint32(b[56:])
	h.MaxM = u64(60)
	h.MaxM0 = u64(68)
	h.M = u64(76)
	h.Mult = math.Float64frombits(u64(84))
	h.EfConstruction = u64(92)
	switch {
	case h.Version != HNSWVersion:
		return h, fmt.Errorf("hnsw header.bin: persistence version %d, this reads %d", h.Version, HNSWVersion)
	case h.SizePerElement == 0 || h.SizePerElement > maxElementBytes:
		return h, fmt.Errorf("hnsw header.bin: element size %d outside 1..%d", h.SizePerElement, maxElementBytes)
	case h.ElementCount > h.MaxElements:
		return h, fmt.Errorf("hnsw header.bin: %d elements in an index of %d", h.ElementCount, h.MaxElements)
	case h.ElementCount > (1<<46)/h.SizePerElement:
		return h, fmt.Errorf("hnsw header.bin: %d elements of %d bytes is past any real index", h.ElementCount, h.SizePerElement)
	case h.MaxM0 > maxElementBytes/4 || h.OffsetLevel0 > h.SizePerElement ||
		h.OffsetData != h.OffsetLevel0+4+4*h.MaxM0:
		return h, fmt.Errorf("hnsw header.bin: data offset %d does not follow %d level-0 links at %d", h.OffsetData, h.MaxM0, h.OffsetLevel0)
	case h.LabelOffset < h.OffsetData || (h.LabelOffset-h.OffsetData)%4 != 0 || h.LabelOffset == h.OffsetData:
		return h, fmt.Errorf("hnsw header.bin: label offset %d does not follow float32 data at %d", h.LabelOffset, h.OffsetData)
	case h.LabelOffset > h.SizePerElement || h.SizePerElement-h.LabelOffset < 8:
		return h, fmt.Errorf("hnsw header.bin: label offset %d leaves no 8-byte label in a %d-byte element", h.LabelOffset, h.SizePerElement)
	}
	return h, nil
}

// ParseLengths decodes length.bin's first n norms. It never panics on malformed input.
func ParseLengths(b []byte, n uint64) ([]float32, error) {
	if n > uint64(len(b))/4 {
		return nil, fmt.Errorf("hnsw length.bin: %d bytes, want %d norms", len(b), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// HNSWElement is one element of data_level0.bin.
type HNSWElement struct {
	Label   uint64
	Deleted bool
	Vector  []float32
}

// ParseHNSWElement decodes one element of h's layout from b (len(b) == h.SizePerElement).
func ParseHNSWElement(h HNSWHeader, b []byte) (HNSWElement, error) {
	var e HNSWElement
	if uint64(len(b)) != h.SizePerElement {
		return e, fmt.Errorf("hnsw element of %d bytes, want %d", len(b), h.SizePerElement)
	}
	e.Deleted = b[h.OffsetLevel0+2]&deleteMark != 0
	e.Label = binary.LittleEndian.Uint64(b[h.LabelOffset:])
	data := b[h.OffsetData:h.LabelOffset]
	e.Vector = make([]float32, len(data)/4)
	for i := range e.Vector {
		e.Vector[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return e, nil
}

// HNSWIndex reads the vectors of a persisted index directory.
type HNSWIndex struct {
	Dir    string
	Header HNSWHeader
	// Lengths are the norms from length.bin, nil when the file is missing or short.
	Lengths []float32
}

// OpenHNSW reads header.bin and length.bin of the index in dir.
func OpenHNSW(dir string) (*HNSWIndex, error) {
	hb, err := readSmall(filepath.Join(dir, "header.bin"), HNSWHeaderSize+1)
	if err != nil {
		return nil, err
	}
	h, err := ParseHNSWHeader(hb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	x := &HNSWIndex{Dir: dir, Header: h}
	if lb, err := readSmall(filepath.Join(dir, "length.bin"), int64(4*h.ElementCount)); err == nil {
		x.Lengths, _ = ParseLengths(lb, h.ElementCount)
	}
	return x, nil
}

// readSmall reads at most limit bytes of a file.
func readSmall(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// Elements calls fn with each element in use, in order of internal ID. With denormalize (a
// cosine index) the vector is scaled back by its norm from length.bin where that norm is a
// positive finite number, as hnswlib's getDataByLabel does. fn may keep e.Vector: every
// element gets an array of its own.
func (x *HNSWIndex) Elements(denormalize bool, fn func(e HNSWElement) error) error {
	f, err := os.Open(filepath.Join(x.Dir, "data_level0.bin"))
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h := x.Header
	if need := h.ElementCount * h.SizePerElement; uint64(st.Size()) < need {
		return fmt.Errorf("%s: data_level0.bin has %d bytes, %d elements need %d", x.Dir, st.Size(), h.ElementCount, need)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	buf := make([]byte, h.SizePerElement)
	for i := uint64(0); i < h.ElementCount; i++ {
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("%s: data_level0.bin element %d: %w", x.Dir, i, err)
		}
		e, err := ParseHNSWElement(h, buf)
		if err != nil {
			return err
		}
		if denormalize && i < uint64(len(x.Lengths)) {
			if n := x.Lengths[i]; n > 0 && !math.IsInf(float64(n), 0) && !math.IsNaN(float64(n)) {
				for j := range e.Vector {
					e.Vector[j] *= n
				}
			}
		}
		if err := fn(e); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

// errStop ends Elements early without an error.
var errStop = errors.New("stop")
