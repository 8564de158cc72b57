package memory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// The export format (docs/format/export.md): JSON Lines, a header line then one MemoryJSON per
// line. Version 1 (the first release) had no header; ReadExport reads both.
const (
	ExportFormat  = "engram-export"
	ExportVersion = 2
	// MaxExportLine bounds one line of an export file.
	MaxExportLine = 64 << 20
)

// ExportHeader is the first line of an export file.
type ExportHeader struct {
	Format      string    `json:"format"`
	Version     int       `json:"version"`
	Exported    time.Time `json:"exported"`
	Fingerprint string    `json:"fingerprint"`
	Dim         int       `json:"dim"`
	Vectors     bool      `json:"vectors"`
}

// ExportOptions select what Export writes.
type ExportOptions struct {
	Filter  *Filter
	Vectors bool
}

// Export writes the memories the filter matches in the export format and returns how many.
func (s *Store) Export(ctx context.Context, w io.Writer, o ExportOptions) (int, error) {
	if err := o.Filter.Validate(); err != nil {
		return 0, err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s.NewExportHeader(o.Vectors)); err != nil {
		return 0, err
	}
	n := 0
	err := s.Scan(ctx, o.Filter, func(m Memory) error {
		n++
		return enc.Encode(ToJSON(&m, o.Vectors))
	})
	return n, err
}

// ReadExport parses an export file of either version, strictly (unknown keys, a memory without
// ID or text, an ID twice, trailing data on a line are errors naming the line), and returns its
// header (Version 1 and the rest zero for a headerless first-release file) and memories. It
// never panics on malformed input.
func ReadExport(r io.Reader) (ExportHeader, []Memory, error) {
	h := ExportHeader{Format: ExportFormat, Version: 1}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxExportLine)
	var ms []Memory
	seen := map[string]bool{}
	first := true
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if first {
			first = false
			hh, ok, err := ParseExportHeader(b)
			if err != nil {
				return h, nil, fmt.Errorf("line %d: %w", line, err)
			}
			if ok {
				h = hh
				continue
			}
		}
		var j MemoryJSON
		if err := strictJSON(b, &j); err != nil {
			return h, nil, fmt.Errorf("%w: line %d: %v", ErrInvalidInput, line, err)
		}
		if j.ID == "" || j.Text == "" {
			return h, nil, fmt.Errorf("%w: line %d: a memory needs an id and a text", ErrInvalidInput, line)
		}
		if seen[j.ID] {
			return h, nil, fmt.Errorf("%w: line %d: memory %q appears twice", ErrInvalidInput, line, j.ID)
		}
		seen[j.ID] = true
		if j.Importance == 0 { // version 1 left out the default importance
			j.Importance = DefaultImportance
		}
		ms = append(ms, j.Memory())
	}
	if err := sc.Err(); err != nil {
		return h, nil, fmt.Errorf("%w: reading the export: %v", ErrInvalidInput, err)
	}
	return h, ms, nil
}

// strictJSON decodes one JSON object into v, refusing unknown keys and trailing data.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}

// NewExportHeader returns the header of an export of this store, written now.
func (s *Store) NewExportHeader(vectors bool) ExportHeader {
	emb := s.Embedder()
	return ExportHeader{Format: ExportFormat, Version: ExportVersion, Exported: s.opts.Clock().UTC(),
		Fingerprint: emb.Fingerprint(), Dim: emb.Dim(), Vectors: vectors}
}

// ParseExportHeader recognizes the header line of an export file: ok is false for any other
// line (a memory, or a first-release file's first memory); err reports a header that is
// malformed or of a version this build cannot read.
func ParseExportHeader(line []byte) (h ExportHeader, ok bool, err error) {
	var probe struct {
		Format *string `json:"format"`
	}
	if json.Unmarshal(line, &probe) != nil || probe.Format == nil {
		return h, false, nil
	}
	if err := strictJSON(bytes.TrimSpace(line), &h); err != nil {
		return h, true, fmt.Errorf("%w: export header: %v", ErrInvalidInput, err)
	}
	if h.Format != ExportFormat || h.Version < 1 || h.Version > ExportVersion {
		return h, true, fmt.Errorf("%w: format %q version %d; this build reads %s versions 1 to %d",
			ErrInvalidInput, h.Format, h.Version, ExportFormat, ExportVersion)
	}
	return h, true, nil
}
