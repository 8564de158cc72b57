package dataset

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// MaxDim bounds the dimension a reader accepts, so a corrupt header cannot
// make it allocate gigabytes for one row.
const MaxDim = 1 << 16

// Vectors is a set of equal-length float32 vectors stored in one flat slice
// (row i is Data[i*Dim:(i+1)*Dim]).
type Vectors struct {
	Dim  int
	Data []float32
}

// Len returns the number of vectors.
func (v *Vectors) Len() int {
	if v.Dim == 0 {
		return 0
	}
	return len(v.Data) / v.Dim
}

// Row returns vector i, sharing storage with v.
func (v *Vectors) Row(i int) []float32 { return v.Data[i*v.Dim : (i+1)*v.Dim : (i+1)*v.Dim] }

// Head returns the first n vectors (all of them if n <= 0 or n > Len),
// sharing storage with v.
func (v *Vectors) Head(n int) *Vectors {
	if n <= 0 || n > v.Len() {
		return v
	}
	return &Vectors{Dim: v.Dim, Data: v.Data[:n*v.Dim]}
}

// ReadFvecs reads .fvecs rows (little-endian int32 dim, then dim float32)
// until EOF, or until maxRows rows if maxRows > 0. Every row must have the
// same dimension.
func ReadFvecs(r io.Reader, maxRows int) (*Vectors, error) {
	v := &Vectors{}
	err := readRows(r, maxRows, func(dim int, row []byte) {
		v.Dim = dim
		for i := 0; i < dim; i++ {
			v.Data = append(v.Data, math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:])))
		}
	})
	if err != nil {
		return nil, fmt.Errorf("fvecs: %w", err)
	}
	return v, nil
}

// ReadIvecs reads .ivecs rows (little-endian int32 dim, then dim int32), as
// used for ground truth, until EOF or maxRows rows if maxRows > 0.
func ReadIvecs(r io.Reader, maxRows int) ([][]int32, error) {
	var rows [][]int32
	err := readRows(r, maxRows, func(dim int, row []byte) {
		out := make([]int32, dim)
		for i := range out {
			out[i] = int32(binary.LittleEndian.Uint32(row[4*i:]))
		}
		rows = append(rows, out)
	})
	if err != nil {
		return nil, fmt.Errorf("ivecs: %w", err)
	}
	return rows, nil
}

// readRows parses the framing shared by fvecs and ivecs. Memory grows only
// with bytes actually read, whatever the headers claim.
func readRows(r io.Reader, maxRows int, emit func(dim int, row []byte)) error {
	br := bufio.NewReaderSize(r, 1<<16)
	var hdr [4]byte
	var buf []byte
	first := 0
	for n := 0; maxRows <= 0 || n < maxRows; n++ {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("row %d: header: %w", n, err)
		}
		dim := int(int32(binary.LittleEndian.Uint32(hdr[:])))
		if dim <= 0 || dim > MaxDim {
			return fmt.Errorf("row %d: dimension %d outside [1, %d]", n, dim, MaxDim)
		}
		if first == 0 {
			first = dim
			buf = make([]byte, 4*dim)
		} else if dim != first {
			return fmt.Errorf("row %d: dimension %d differs from %d", n, dim, first)
		}
		if _, err := io.ReadFull(br, buf); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("row %d: %w", n, err)
		}
		emit(dim, buf)
	}
	return nil
}

// openMaybeGzip opens path, decompressing it if the name ends in .gz.
func openMaybeGzip(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, nil
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}

// LoadFvecs reads an .fvecs or .fvecs.gz file.
func LoadFvecs(path string, maxRows int) (*Vectors, error) {
	rc, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	v, err := ReadFvecs(rc, maxRows)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if v.Len() == 0 {
		return nil, fmt.Errorf("%s: no vectors", path)
	}
	return v, nil
}

// LoadIvecs reads an .ivecs or .ivecs.gz file.
func LoadIvecs(path string, maxRows int) ([][]int32, error) {
	rc, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	rows, err := ReadIvecs(rc, maxRows)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	return rows, nil
}

// WriteFvecs writes v in .fvecs format.
func WriteFvecs(w io.Writer, v *Vectors) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	row := make([]byte, 4+4*v.Dim)
	binary.LittleEndian.PutUint32(row, uint32(v.Dim))
	for i := 0; i < v.Len(); i++ {
		for j, x := range v.Row(i) {
			binary.LittleEndian.PutUint32(row[4+4*j:], math.Float32bits(x))
		}
		if _, err := bw.Write(row); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteIvecs writes rows in .ivecs format.
func WriteIvecs(w io.Writer, rows [][]int32) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var b [4]byte
	for _, r := range rows {
		binary.LittleEndian.PutUint32(b[:], uint32(len(r)))
		if _, err := bw.Write(b[:]); err != nil {
			return err
		}
		for _, x := range r {
			binary.LittleEndian.PutUint32(b[:], uint32(x))
			if _, err := bw.Write(b[:]); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// WriteFile writes a file atomically: a 0600 temporary in the same
// directory, synced and renamed over path.
func WriteFile(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// ErrNoDatasets is returned by FindRoot when no shared/datasets directory
// is found above the starting directory.
var ErrNoDatasets = errors.New("dataset: no shared/datasets directory found")
