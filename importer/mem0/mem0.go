// Package mem0 reads the JSON that mem0's Memory.get_all returns (or MemoryClient.get_all,
// mem0's platform API), for memctl import --from mem0.
//
// Both shapes are read: a list of memories, or an object with the list under "results" (mem0
// 1.x; a "relations" list beside it, mem0's graph memory, is counted as unmapped). A memory is
// an object with "id" and "memory" (strings), and optionally "hash", "user_id", "agent_id",
// "run_id", "actor_id", "role", "metadata" (an object), "created_at" and "updated_at" (ISO 8601
// strings), "categories" (a list of strings) and whatever else mem0 promotes to the top level.
//
// The mapping (docs/format/import.md): "memory" is the text; the memory's ID is derived from
// "id" (importer.ID) and "id" is kept as metadata mem0_id; Session maps user_id / agent_id /
// run_id onto engram's session; the scope IDs the session does not take, actor_id, role and
// the other top-level fields are metadata under their own names; "metadata" is mapped by
// importer.Mapping (source, tags, importance by name, the rest as metadata); "categories"
// become the tags when the metadata gives none; created_at and updated_at are the memory's
// times. "hash" (mem0's MD5 of the text) and "score" (a search result's) are not kept and are
// counted as unmapped.
//
// Decode is strict about the shape and never panics: input that is not JSON, a memory that is
// not an object, a missing or non-string id or memory, an ID twice, a time that does not
// parse, are errors naming the memory, and Read returns no memories at all then, so nothing is
// written.
package mem0

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/engramdb/engram/importer"
	"github.com/engramdb/engram/memory"
)

// Kind is the source kind in IDs and reports.
const Kind = "mem0"

// IDKey is the metadata key that keeps mem0's ID.
const IDKey = "mem0_id"

// MaxDump bounds the size of a dump Decode reads.
const MaxDump = 1 << 30

// Item is one memory of a dump.
type Item struct {
	ID       string
	Memory   string
	Hash     string
	UserID   string
	AgentID  string
	RunID    string
	Metadata map[string]any
	Created  time.Time // zero when absent or null
	Updated  time.Time // zero when absent or null
	HasScore bool
	Extra    map[string]any // the other top-level fields (actor_id, role, categories, ...)
}

// Dump is a decoded get_all answer.
type Dump struct {
	Items []Item
	// Relations counts the entries of a "relations" list beside "results" (graph memory).
	Relations int
}

// Decode reads a get_all dump (see the package documentation).
func Decode(r io.Reader) (Dump, error) {
	var d Dump
	b, err := io.ReadAll(io.LimitReader(r, MaxDump+1))
	if err != nil {
		return d, fmt.Errorf("%w: mem0: reading the dump: %v", memory.ErrInvalidInput, err)
	}
	if len(b) > MaxDump {
		return d, fmt.Errorf("%w: mem0: the dump is over %d MiB", memory.ErrInvalidInput, MaxDump>>20)
	}
	b = bytes.TrimSpace(b)
	var list []json.RawMessage
	switch {
	case len(b) == 0:
		return d, fmt.Errorf("%w: mem0: the dump is empty (want a list of memories or {\"results\": [...]})", memory.ErrInvalidInput)
	case b[0] == '[':
		if err := strictUnmarshal(b, &list); err != nil {
			return d, fmt.Errorf("%w: mem0: the dump is not a JSON list of memories: %v", memory.ErrInvalidInput, err)
		}
	case b[0] == '{':
		var top map[string]json.RawMessage
		if err := strictUnmarshal(b, &top); err != nil {
			return d, fmt.Errorf("%w: mem0: the dump is not JSON: %v", memory.ErrInvalidInput, err)
		}
		res, ok := top["results"]
		if !ok {
			return d, fmt.Errorf("%w: mem0: an object without \"results\" (want a list of memories or {\"results\": [...]})", memory.ErrInvalidInput)
		}
		if err := json.Unmarshal(res, &list); err != nil || list == nil && !bytes.Equal(bytes.TrimSpace(res), []byte("[]")) {
			return d, fmt.Errorf("%w: mem0: \"results\" is not a list of memories", memory.ErrInvalidInput)
		}
		if rel, ok := top["relations"]; ok {
			var rels []json.RawMessage
			if err := json.Unmarshal(rel, &rels); err != nil {
				return d, fmt.Errorf("%w: mem0: \"relations\" is not a list", memory.ErrInvalidInput)
			}
			d.Relations = len(rels)
		}
	default:
		return d, fmt.Errorf("%w: mem0: the dump is not JSON (want a list of memories or {\"results\": [...]})", memory.ErrInvalidInput)
	}
	seen := make(map[string]bool, len(list))
	for i, raw := range list {
		it, err := decodeItem(raw)
		if err != nil {
			return Dump{}, fmt.Errorf("%w: mem0: memory %d: %v", memory.ErrInvalidInput, i+1, err)
		}
		if seen[it.ID] {
			return Dump{}, fmt.Errorf("%w: mem0: memory %d: id %q appears twice", memory.ErrInvalidInput, i+1, it.ID)
		}
		seen[it.ID] = true
		d.Items = append(d.Items, it)
	}
	return d, nil
}

// strictUnmarshal decodes b into v and refuses trailing data.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

func decodeItem(raw json.RawMessage) (Item, error) {
	var it Item
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return it, fmt.Errorf("not a JSON object")
	}
	str := func(k string, required bool) (string, error) {
		v, ok := obj[k]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			if required {
				return "", fmt.Errorf("no %q", k)
			}
			return "", nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", fmt.Errorf("%q is not a string", k)
		}
		return s, nil
	}
	var err error
	if it.ID, err = str("id", true); err != nil {
		return it, err
	}
	if it.ID == "" {
		return it, fmt.Errorf("empty \"id\"")
	}
	if it.Memory, err = str("memory", true); err != nil {
		return it, fmt.Errorf("id %q: %v", it.ID, err)
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"hash", &it.Hash}, {"user_id", &it.UserID}, {"agent_id", &it.AgentID}, {"run_id", &it.RunID}} {
		if *f.dst, err = str(f.key, false); err != nil {
			return it, fmt.Errorf("id %q: %v", it.ID, err)
		}
	}
	for _, f := range []struct {
		key string
		dst *time.Time
	}{{"created_at", &it.Created}, {"updated_at", &it.Updated}} {
		s, err := str(f.key, false)
		if err != nil {
			return it, fmt.Errorf("id %q: %v", it.ID, err)
		}
		if s == "" {
			continue
		}
		if *f.dst, err = importer.ParseTime(s); err != nil {
			return it, fmt.Errorf("id %q: %q: %v", it.ID, f.key, err)
		}
	}
	if v, ok := obj["metadata"]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		if err := json.Unmarshal(v, &it.Metadata); err != nil || it.Metadata == nil {
			return it, fmt.Errorf("id %q: \"metadata\" is not an object", it.ID)
		}
	}
	_, it.HasScore = obj["score"]
	for k, v := range obj {
		switch k {
		case "id", "memory", "hash", "user_id", "agent_id", "run_id", "created_at", "updated_at", "metadata", "score":
			continue
		}
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return it, fmt.Errorf("id %q: %q: %v", it.ID, k, err)
		}
		if it.Extra == nil {
			it.Extra = map[string]any{}
		}
		it.Extra[k] = x
	}
	return it, nil
}

// Session is the engram session of a mem0 memory: its user_id, else its agent_id, else its
// run_id ("" when it has none: engram's default session), and the key it came from. It is
// memory.Scope's mapping, the one every door uses (the Python client's mem0-style facade too), so
// code written against mem0 finds its memories under the same IDs; the scope IDs it does not
// use stay in the memory's metadata (memory.MetaAgentID, memory.MetaRunID), where recall, list
// and forget select them.
func Session(userID, agentID, runID string) (session, from string) {
	return memory.Scope{User: userID, Agent: agentID, Run: runID}.Session()
}

// Options tune Read.
type Options struct {
	// Session, if not nil, puts every memory into this session; user_id, agent_id and run_id
	// all stay in the metadata then.
	Session *string
	// Now stands in for a missing created_at (the import's time by default).
	Now time.Time
}

// Read decodes a dump and maps its memories (see the package documentation). On any decode
// error it returns no memories.
func Read(r io.Reader, name string, o Options) ([]memory.Memory, *importer.Report, error) {
	rep := importer.NewReport(Kind + " " + name)
	d, err := Decode(r)
	if err != nil {
		return nil, rep, err
	}
	mp := importer.Mapping{Kind: Kind, IDKey: IDKey, Now: o.Now}
	ms := make([]memory.Memory, 0, len(d.Items))
	for _, it := range d.Items {
		rec := importer.Record{SourceID: it.ID, Text: it.Memory, Created: it.Created, Updated: it.Updated, Metadata: map[string]any{}}
		sessionFrom := ""
		if o.Session != nil {
			rec.Session = *o.Session
		} else {
			rec.Session, sessionFrom = Session(it.UserID, it.AgentID, it.RunID)
		}
		for _, s := range []struct{ v, k string }{{it.UserID, "user_id"}, {it.AgentID, "agent_id"}, {it.RunID, "run_id"}} {
			switch {
			case s.v == "":
			case s.k == sessionFrom:
				rep.Field(s.k, "session")
			default:
				rec.Metadata[s.k] = s.v
			}
		}
		var categories any
		for _, k := range slices.Sorted(maps.Keys(it.Extra)) {
			if k == "categories" {
				categories = it.Extra[k]
				continue
			}
			rec.Metadata[k] = it.Extra[k]
		}
		for _, k := range slices.Sorted(maps.Keys(it.Metadata)) {
			if _, taken := rec.Metadata[k]; taken {
				rep.Unmap("metadata."+k, "also a top-level field")
				continue
			}
			rec.Metadata[k] = it.Metadata[k]
		}
		m, ok := mp.Memory(rec, rep)
		if !ok {
			continue
		}
		rep.Field("memory", "text")
		if !it.Created.IsZero() {
			rep.Field("created_at", "created")
		}
		if !it.Updated.IsZero() {
			rep.Field("updated_at", "updated")
		}
		if it.Hash != "" {
			rep.Unmap("hash", "mem0's MD5 of the text, not kept")
		}
		if it.HasScore {
			rep.Unmap("score", "a search score, not kept")
		}
		if categories != nil {
			if tags, ok := importer.Tags(categories); ok && m.Tags == nil {
				m.Tags = tags
				rep.Field("categories", "tags")
			} else if ok {
				rep.Unmap("categories", "the metadata gives the tags")
			} else {
				rep.Unmap("categories", "not a list of tags")
			}
		}
		ms = append(ms, m)
	}
	for range d.Relations {
		rep.Unmap("relations", "graph memory relations are not imported")
	}
	rep.WhyEmbedded("get_all returns no vectors")
	return ms, rep, nil
}
