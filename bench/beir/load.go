package beir

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Doc is one corpus document.
type Doc struct {
	ID      string
	Title   string
	Text    string
	Session string    // optional "session" field: the memory session it belongs to
	Time    time.Time // optional "time" field; zero when absent
}

// Content is the text to index: the title and the text, as BEIR's
// retrievers use them.
func (d Doc) Content() string {
	if d.Title == "" {
		return d.Text
	}
	return d.Title + " " + d.Text
}

// Query is one query.
type Query struct {
	ID      string
	Text    string
	Session string // optional "session" field
}

// Qrels maps a query ID to its judged documents and their grades. A grade of
// 0 or less means "not relevant".
type Qrels map[string]map[string]int

// Dataset is a loaded BEIR-style folder.
type Dataset struct {
	Docs    []Doc
	Queries []Query
	Qrels   Qrels
}

// Judged returns the queries with at least one relevant (grade > 0)
// document, in file order: the queries every metric averages over.
func (d *Dataset) Judged() []Query {
	var out []Query
	for _, q := range d.Queries {
		if hasRelevant(d.Qrels[q.ID]) {
			out = append(out, q)
		}
	}
	return out
}

// Load reads prefix+"corpus.jsonl", prefix+"queries.jsonl" and
// prefix+"qrels.tsv" from dir; each may also be gzipped (name + ".gz").
// Duplicate document or query IDs and qrels lines that are not
// "query-id<TAB>corpus-id<TAB>integer" (after an optional header) are errors.
func Load(dir, prefix string) (*Dataset, error) {
	ds := &Dataset{Qrels: Qrels{}}
	path := func(name string) string { return filepath.Join(dir, prefix+name) }
	seen := map[string]bool{}
	err := readFile(path("corpus.jsonl"), func(r io.Reader) error {
		return readJSONL(r, func(line int, raw []byte) error {
			var v struct {
				ID      json.RawMessage `json:"_id"`
				Title   string          `json:"title"`
				Text    string          `json:"text"`
				Session json.RawMessage `json:"session"`
				Time    json.RawMessage `json:"time"`
			}
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			id, err := idString(v.ID)
			if err != nil {
				return fmt.Errorf("_id: %w", err)
			}
			if seen[id] {
				return fmt.Errorf("duplicate document %q", id)
			}
			seen[id] = true
			d := Doc{ID: id, Title: v.Title, Text: v.Text}
			if d.Session, err = optionalString(v.Session); err != nil {
				return fmt.Errorf("session: %w", err)
			}
			if d.Time, err = parseTime(v.Time); err != nil {
				return fmt.Errorf("time: %w", err)
			}
			ds.Docs = append(ds.Docs, d)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	seen = map[string]bool{}
	err = readFile(path("queries.jsonl"), func(r io.Reader) error {
		return readJSONL(r, func(line int, raw []byte) error {
			var v struct {
				ID      json.RawMessage `json:"_id"`
				Text    string          `json:"text"`
				Session json.RawMessage `json:"session"`
			}
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			id, err := idString(v.ID)
			if err != nil {
				return fmt.Errorf("_id: %w", err)
			}
			if seen[id] {
				return fmt.Errorf("duplicate query %q", id)
			}
			seen[id] = true
			q := Query{ID: id, Text: v.Text}
			if q.Session, err = optionalString(v.Session); err != nil {
				return fmt.Errorf("session: %w", err)
			}
			ds.Queries = append(ds.Queries, q)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	err = readFile(path("qrels.tsv"), func(r io.Reader) error { return readQrels(r, ds.Qrels) })
	if err != nil {
		return nil, err
	}
	return ds, nil
}

// readFile opens name, or name+".gz" when name does not exist, and passes
// the (decompressed) contents to fn. Errors name the file.
func readFile(name string, fn func(io.Reader) error) error {
	f, err := os.Open(name)
	gz := false
	if errors.Is(err, os.ErrNotExist) {
		f, err = os.Open(name + ".gz")
		name, gz = name+".gz", true
	}
	if err != nil {
		return fmt.Errorf("beir: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if gz {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("beir: %s: %w", name, err)
		}
		defer zr.Close()
		r = zr
	}
	if err := fn(r); err != nil {
		return fmt.Errorf("beir: %s: %w", name, err)
	}
	return nil
}

// readJSONL calls fn for each non-blank line of r.
func readJSONL(r io.Reader, fn func(line int, raw []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		raw := sc.Bytes()
		if len(strings.TrimSpace(string(raw))) == 0 {
			continue
		}
		if err := fn(line, raw); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	return sc.Err()
}

// idString accepts a JSON string or number as an ID (some exports write
// numeric IDs).
func idString(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("missing")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return "", errors.New("empty")
		}
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", fmt.Errorf("not a string or number: %s", raw)
	}
	return n.String(), nil
}

func optionalString(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	return idString(raw)
}

// parseTime accepts RFC 3339, a plain date (2006-01-02, UTC), or a number of
// Unix seconds.
func parseTime(raw json.RawMessage) (time.Time, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t, nil
		}
		if t, err := time.Parse(time.DateOnly, s); err == nil {
			return t, nil
		}
		return time.Time{}, fmt.Errorf("%q is neither RFC 3339 nor YYYY-MM-DD", s)
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return time.Time{}, fmt.Errorf("not a string or number: %s", raw)
	}
	sec, frac := int64(f), f-float64(int64(f))
	return time.Unix(sec, int64(frac*1e9)).UTC(), nil
}

func readQrels(r io.Reader, qrels Qrels) error {
	cr := csv.NewReader(r)
	cr.Comma = '\t'
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) == 4 { // TREC style: qid iter docid grade
			rec = []string{rec[0], rec[2], rec[3]}
		}
		if len(rec) != 3 {
			return fmt.Errorf("line %d: %d fields, want 3", line, len(rec))
		}
		grade, err := strconv.Atoi(strings.TrimSpace(rec[2]))
		if err != nil {
			if line == 1 {
				continue // header
			}
			return fmt.Errorf("line %d: grade %q: %w", line, rec[2], err)
		}
		q, d := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if q == "" || d == "" {
			return fmt.Errorf("line %d: empty id", line)
		}
		if qrels[q] == nil {
			qrels[q] = map[string]int{}
		}
		qrels[q][d] = grade
	}
}

// FindDatasets walks up from the working directory to the first directory
// holding shared/datasets and returns that path; ok is false when there is
// none (tests then skip).
func FindDatasets() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		p := filepath.Join(dir, "shared", "datasets")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
