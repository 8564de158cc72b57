package weaviate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// kv is the KV namespace: one object per key in the KV class.
type kv struct {
	b     *Backend
	class string
}

func (k *kv) ctx() context.Context { return context.Background() }

// Get returns the value of key.
func (k *kv) Get(key string) ([]byte, bool, error) {
	var o object
	err := k.b.c.do(k.ctx(), http.MethodGet, "/v1/objects/"+k.class+"/"+objectID(k.class, key), readQuery(k.b.opts.ReadConsistency), nil, &o)
	if isStatus(err, http.StatusNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v, err := decodeKV(o.Properties)
	if err != nil {
		return nil, false, fmt.Errorf("weaviate: KV key %q: %w", key, err)
	}
	return v.value, true, nil
}

// Put stores value under key durably (at the write consistency level).
func (k *kv) Put(key string, value []byte) error {
	return k.b.c.batchWrite(k.ctx(), []batchObject{{
		Class: k.class, ID: objectID(k.class, key),
		Properties: map[string]any{"k": key, "v": base64.StdEncoding.EncodeToString(value)},
	}}, k.b.opts.WriteConsistency)
}

// Delete removes key; a missing key is not an error.
func (k *kv) Delete(key string) error {
	q := readQuery(k.b.opts.WriteConsistency)
	err := k.b.c.do(k.ctx(), http.MethodDelete, "/v1/objects/"+k.class+"/"+objectID(k.class, key), q, nil, nil)
	if err != nil && !isStatus(err, http.StatusNotFound) {
		return err
	}
	return nil
}

// Scan calls fn for every key with prefix, in key order. The KV namespace is
// small (conversations, tasks, archive parts), so it reads all keys.
func (k *kv) Scan(prefix string, fn func(key string, value []byte) error) error {
	var entries []kvEntry
	after := ""
	for {
		objs, err := k.b.c.list(k.ctx(), k.class, after, scanPage, false)
		if err != nil {
			return err
		}
		for _, o := range objs {
			e, err := decodeKV(o.Properties)
			if err != nil {
				return fmt.Errorf("weaviate: KV object %s: %w", o.ID, err)
			}
			if strings.HasPrefix(e.key, prefix) {
				entries = append(entries, e)
			}
		}
		if len(objs) < scanPage {
			break
		}
		after = objs[len(objs)-1].ID
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
	for _, e := range entries {
		if err := fn(e.key, e.value); err != nil {
			return err
		}
	}
	return nil
}

type kvEntry struct {
	key   string
	value []byte
}

func decodeKV(props json.RawMessage) (kvEntry, error) {
	var p struct {
		K string `json:"k"`
		V string `json:"v"`
	}
	if err := json.Unmarshal(props, &p); err != nil {
		return kvEntry{}, err
	}
	v, err := base64.StdEncoding.DecodeString(p.V)
	if err != nil {
		return kvEntry{}, err
	}
	return kvEntry{p.K, v}, nil
}
