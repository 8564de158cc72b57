package importer

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// Report says what an import read, mapped, left out and wrote. Its JSON form is what
// memctl import --json prints.
type Report struct {
	// Source names what was read ("chroma DIR", "mem0 FILE") and Collections the Chroma
	// collections read.
	Source      string   `json:"source"`
	Collections []string `json:"collections,omitempty"`
	// Records counts the records read, Memories those that became memories; Dropped counts
	// the others by reason.
	Records  int            `json:"records"`
	Memories int            `json:"memories"`
	Dropped  map[string]int `json:"dropped,omitempty"`
	// Fields counts, per source key, the records whose value went to each engram field
	// ("text", "session", "source", "tags", "importance", "created", "updated", "metadata").
	Fields map[string]map[string]int `json:"fields"`
	// Unmapped counts, per source key, the records whose value was left out, by reason.
	Unmapped map[string]map[string]int `json:"unmapped,omitempty"`
	// Defaulted counts fields the source did not give a usable value for, by the value used.
	Defaulted map[string]int `json:"defaulted,omitempty"`
	Vectors   VectorReport   `json:"vectors"`
	// Written counts the memories this run wrote, Existing those an earlier run had.
	Written  int `json:"written"`
	Existing int `json:"existing"`
}

// VectorReport says where the memories' vectors came from.
type VectorReport struct {
	// Kept counts memories imported with the source's vector, by where it was read (From:
	// "queue" for Chroma's embeddings_queue, "hnsw" for its hnswlib segment files).
	Kept int            `json:"kept"`
	From map[string]int `json:"from,omitempty"`
	// Embedded counts memories whose text the store embeds again; Why says why.
	Embedded int      `json:"embedded"`
	Why      []string `json:"why,omitempty"`
}

// NewReport returns an empty report of source.
func NewReport(source string) *Report {
	return &Report{Source: source, Fields: map[string]map[string]int{}}
}

func (r *Report) field(key, field string) { count2(&r.Fields, key, field) }

func (r *Report) unmapped(key, reason string) { count2(&r.Unmapped, key, reason) }

// Field counts one record whose key went to field (for the fields a reader maps itself).
func (r *Report) Field(key, field string) { r.field(key, field) }

// Unmap counts one record whose key was left out, for reason.
func (r *Report) Unmap(key, reason string) { r.unmapped(key, reason) }

// VectorFrom counts one kept vector read from where.
func (r *Report) VectorFrom(where string) { count(&r.Vectors.From, where) }

// WhyEmbedded records a reason the source's vectors were not used (once per reason).
func (r *Report) WhyEmbedded(why string) {
	if !slices.Contains(r.Vectors.Why, why) {
		r.Vectors.Why = append(r.Vectors.Why, why)
	}
}

func (r *Report) drop(reason string) { count(&r.Dropped, reason) }

func (r *Report) defaulted(what string) { count(&r.Defaulted, what) }

func count(m *map[string]int, k string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k]++
}

func count2(m *map[string]map[string]int, k, k2 string) {
	if *m == nil {
		*m = map[string]map[string]int{}
	}
	if (*m)[k] == nil {
		(*m)[k] = map[string]int{}
	}
	(*m)[k][k2]++
}

// UnmappedTotal is how many values were left out, over every key.
func (r *Report) UnmappedTotal() int {
	n := 0
	for _, m := range r.Unmapped {
		for _, c := range m {
			n += c
		}
	}
	return n
}

// WriteSummary writes the report for a person: what was read and written, where each source
// key went, and what was left out, per key and reason.
func (r *Report) WriteSummary(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "read %d records from %s", r.Records, r.Source)
	if len(r.Collections) > 0 {
		fmt.Fprintf(&b, " (collections %s)", strings.Join(r.Collections, ", "))
	}
	fmt.Fprintf(&b, ": %d memories", r.Memories)
	if d := r.Records - r.Memories; d > 0 {
		fmt.Fprintf(&b, ", %d left out (%s)", d, joinCounts(r.Dropped))
	}
	fmt.Fprintf(&b, "\nwrote %d memories, %d already in the store from an earlier run\n", r.Written, r.Existing)
	fmt.Fprintf(&b, "vectors: %d from the source", r.Vectors.Kept)
	if len(r.Vectors.From) > 0 {
		fmt.Fprintf(&b, " (%s)", joinCounts(r.Vectors.From))
	}
	fmt.Fprintf(&b, ", %d embedded again by the store", r.Vectors.Embedded)
	if len(r.Vectors.Why) > 0 {
		fmt.Fprintf(&b, ": %s", strings.Join(r.Vectors.Why, "; "))
	}
	b.WriteString("\n")
	if len(r.Defaulted) > 0 {
		fmt.Fprintf(&b, "defaults used: %s\n", joinCounts(r.Defaulted))
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tWENT TO\tRECORDS")
	for _, k := range slices.Sorted(maps.Keys(r.Fields)) {
		for _, f := range slices.Sorted(maps.Keys(r.Fields[k])) {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", k, f, r.Fields[k][f])
		}
	}
	tw.Flush()
	if len(r.Unmapped) == 0 {
		b.WriteString("unmapped: none\n")
	} else {
		fmt.Fprintf(&b, "unmapped (left out): %d values\n", r.UnmappedTotal())
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tREASON\tRECORDS")
		for _, k := range slices.Sorted(maps.Keys(r.Unmapped)) {
			for _, why := range slices.Sorted(maps.Keys(r.Unmapped[k])) {
				fmt.Fprintf(tw, "%s\t%s\t%d\n", k, why, r.Unmapped[k][why])
			}
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func joinCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
