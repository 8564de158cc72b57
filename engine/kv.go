package engine

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// KV is a small durable key-value namespace next to the collections, for
// state such as working memory and migration progress. A Put or Delete is
// one WAL record, durable on return (unless UnsafeNoSync); the whole
// namespace is kept in memory and written into the manifest at each flush,
// so it is meant for kilobytes to a few megabytes, not bulk data: a Put that
// would take the namespace past MaxKVBytes fails (bulk data belongs in
// collections, whose records live in segment files).
type KV struct{ db *DB }

// Limits of the KV namespace.
const (
	MaxKVKeyLen   = 1024
	MaxKVValueLen = 1 << 20
	// MaxKVBytes bounds the whole namespace (keys plus values), which every
	// flush writes into the manifest and every open reads back.
	MaxKVBytes = 32 << 20
)

// KV returns the store's key-value namespace.
func (d *DB) KV() *KV { return &KV{db: d} }

func validKey(key string) error {
	if key == "" || len(key) > MaxKVKeyLen || !utf8.ValidString(key) {
		return fmt.Errorf("%w: KV key must be 1..%d bytes of UTF-8", ErrInvalid, MaxKVKeyLen)
	}
	return nil
}

// Put stores value under key (the slice is copied).
func (kv *KV) Put(key string, value []byte) error {
	if err := validKey(key); err != nil {
		return err
	}
	if len(value) > MaxKVValueLen {
		return fmt.Errorf("%w: KV value of %d bytes, limit %d", ErrInvalid, len(value), MaxKVValueLen)
	}
	d := kv.db
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	d.mu.RLock()
	total := len(key) + len(value)
	for k, v := range d.kv {
		if k != key {
			total += len(k) + len(v)
		}
	}
	d.mu.RUnlock()
	if total > MaxKVBytes {
		return fmt.Errorf("%w: the KV namespace would hold %d bytes, limit %d (bulk data belongs in a collection)", ErrInvalid, total, MaxKVBytes)
	}
	return d.logAndApply(&walOp{op: walKVPut, key: key, value: bytes.Clone(value)})
}

// Get returns a copy of key's value, or an error wrapping ErrNotFound.
func (kv *KV) Get(key string) ([]byte, error) {
	d := kv.db
	d.mu.RLock()
	defer d.mu.RUnlock()
	v, ok := d.kv[key]
	if !ok {
		return nil, fmt.Errorf("%w: KV key %.60q", ErrNotFound, key)
	}
	return bytes.Clone(v), nil
}

// Delete removes key; deleting a missing key is not an error.
func (kv *KV) Delete(key string) error {
	if err := validKey(key); err != nil {
		return err
	}
	d := kv.db
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	d.mu.RLock()
	_, ok := d.kv[key]
	d.mu.RUnlock()
	if !ok {
		return nil
	}
	return d.logAndApply(&walOp{op: walKVDelete, key: key})
}

// Scan calls fn for every key with the prefix, in key order, with a copy
// of the value, until fn returns false. fn may call Put and Delete.
func (kv *KV) Scan(prefix string, fn func(key string, value []byte) bool) error {
	if fn == nil {
		return fmt.Errorf("%w: nil Scan callback", ErrInvalid)
	}
	d := kv.db
	d.mu.RLock()
	var keys []string
	for k := range d.kv {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	d.mu.RUnlock()
	sort.Strings(keys)
	for _, k := range keys {
		d.mu.RLock()
		v, ok := d.kv[k]
		v = bytes.Clone(v)
		d.mu.RUnlock()
		if ok && !fn(k, v) {
			return nil
		}
	}
	return nil
}
