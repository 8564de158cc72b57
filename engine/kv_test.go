package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// TestKVNamespaceLimit: the namespace refuses a Put past MaxKVBytes with ErrInvalid, keeps what
// it holds, and still accepts replacing a value by one no larger.
func TestKVNamespaceLimit(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "s"), Options{UnsafeNoSync: true})
	kv := db.KV()
	big := make([]byte, MaxKVValueLen)
	n := 0
	var err error
	for ; n < MaxKVBytes/MaxKVValueLen+1; n++ {
		if err = kv.Put(fmt.Sprintf("k%03d", n), big); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrInvalid) || n != MaxKVBytes/MaxKVValueLen-1 {
		t.Fatalf("after %d puts of 1 MiB: %v, want ErrInvalid after %d", n, err, MaxKVBytes/MaxKVValueLen-1)
	}
	if _, err := kv.Get(fmt.Sprintf("k%03d", n)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused key exists: %v", err)
	}
	if err := kv.Put("k000", []byte("small")); err != nil {
		t.Fatalf("shrinking a value: %v", err)
	}
	if err := kv.Put(fmt.Sprintf("k%03d", n), big[:1000]); err != nil {
		t.Fatalf("a small put after shrinking: %v", err)
	}
}
