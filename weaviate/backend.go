package weaviate

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/engramdb/engram/memory"
)

// Options configure a Backend. The zero value of each field means its
// documented default.
type Options struct {
	// ClassPrefix starts every class name this backend creates, so several
	// stores can share a cluster. Default "Engram"; letters and digits only,
	// starting with an upper-case letter.
	ClassPrefix string
	// Replication is the replication factor of new classes. Default 1.
	Replication int
	// Shards is how many shards a new collection is split into; 0 lets
	// Weaviate choose (one per node).
	Shards int
	// WriteConsistency is the consistency level of writes: ONE, QUORUM or
	// ALL. Default ALL (an acknowledged write is on every replica).
	WriteConsistency string
	// ReadConsistency is the consistency level of searches and reads.
	// Default ONE.
	ReadConsistency string
	// Token is an optional bearer token (Weaviate API key).
	Token string
	// Timeout bounds one HTTP request. Default 60 s.
	Timeout time.Duration
	// BM25K1 and BM25B configure the keyword index of new classes. Default
	// 1.2 and 0.75, the values the embedded engine uses.
	BM25K1, BM25B float64
}

// Backend is a memory.Backend over a Weaviate cluster. It is safe for
// concurrent use.
type Backend struct {
	c    *client
	opts Options
	kv   *kv
}

var _ memory.Backend = (*Backend)(nil)

// Open connects to the Weaviate node at rawURL (http://, https:// or
// weaviate://HOST:PORT), checks that it is ready, and makes sure the KV
// class exists.
func Open(ctx context.Context, rawURL string, opts Options) (*Backend, error) {
	if opts.ClassPrefix == "" {
		opts.ClassPrefix = "Engram"
	}
	if !validPrefix(opts.ClassPrefix) {
		return nil, fmt.Errorf("weaviate: class prefix %q must be letters and digits starting with an upper-case letter", opts.ClassPrefix)
	}
	if opts.Replication <= 0 {
		opts.Replication = 1
	}
	if opts.WriteConsistency == "" {
		opts.WriteConsistency = "ALL"
	}
	if opts.ReadConsistency == "" {
		opts.ReadConsistency = "ONE"
	}
	for _, lvl := range []string{opts.WriteConsistency, opts.ReadConsistency} {
		if lvl != "ONE" && lvl != "QUORUM" && lvl != "ALL" {
			return nil, fmt.Errorf("weaviate: consistency level %q (want ONE, QUORUM or ALL)", lvl)
		}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.BM25K1 == 0 {
		opts.BM25K1 = 1.2
	}
	if opts.BM25B == 0 {
		opts.BM25B = 0.75
	}
	c, err := newClient(rawURL, opts.Token, opts.Timeout)
	if err != nil {
		return nil, err
	}
	if err := c.do(ctx, http.MethodGet, "/v1/.well-known/ready", nil, nil, nil); err != nil {
		return nil, fmt.Errorf("weaviate: %s is not ready: %w", c.base, err)
	}
	b := &Backend{c: c, opts: opts}
	b.kv = &kv{b: b, class: opts.ClassPrefix + "KV"}
	if err := b.ensureClass(ctx, b.kv.class, "engram key-value namespace", kvProperties, 0); err != nil {
		return nil, err
	}
	return b, nil
}

func validPrefix(p string) bool {
	for i, r := range p {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r)) || (i == 0 && !unicode.IsUpper(r)) {
			return false
		}
	}
	return p != ""
}

// className maps a collection name to a Weaviate class name: the prefix, the
// name's letters and digits, and a hash that keeps distinct names distinct.
func (b *Backend) className(name string) string {
	var s strings.Builder
	for _, r := range name {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			s.WriteRune(unicode.ToLower(r))
		}
		if s.Len() >= 40 {
			break
		}
	}
	sum := sha1.Sum([]byte(name))
	return fmt.Sprintf("%s_%s_%s", b.opts.ClassPrefix, s.String(), hex.EncodeToString(sum[:4]))
}

// property is a Weaviate property definition.
type property struct {
	Name            string   `json:"name"`
	DataType        []string `json:"dataType"`
	Tokenization    string   `json:"tokenization,omitempty"`
	IndexFilterable *bool    `json:"indexFilterable,omitempty"`
	IndexSearchable *bool    `json:"indexSearchable,omitempty"`
}

var (
	yes = true
	no  = false
)

var kvProperties = []property{
	{Name: "k", DataType: []string{"text"}, Tokenization: "field", IndexSearchable: &no},
	{Name: "v", DataType: []string{"blob"}},
}

var memoryProperties = []property{
	{Name: "mid", DataType: []string{"text"}, Tokenization: "field", IndexSearchable: &no},
	{Name: "session", DataType: []string{"text"}, Tokenization: "field", IndexSearchable: &no},
	{Name: "text", DataType: []string{"text"}, IndexFilterable: &no, IndexSearchable: &no},
	{Name: "terms", DataType: []string{"text"}, Tokenization: "whitespace", IndexFilterable: &no, IndexSearchable: &yes},
	{Name: "source", DataType: []string{"text"}, Tokenization: "field", IndexSearchable: &no},
	{Name: "tags", DataType: []string{"text[]"}, Tokenization: "field", IndexSearchable: &no},
	{Name: "importance", DataType: []string{"number"}},
	{Name: "access_count", DataType: []string{"number"}},
	{Name: "created", DataType: []string{"date"}},
	{Name: "updated", DataType: []string{"date"}},
	{Name: "last_access", DataType: []string{"date"}},
	{Name: "times", DataType: []string{"text"}, IndexFilterable: &no, IndexSearchable: &no},
}

// ensureClass creates class unless it exists. dim > 0 makes a vector class.
func (b *Backend) ensureClass(ctx context.Context, class, description string, props []property, dim int) error {
	err := b.c.do(ctx, http.MethodGet, "/v1/schema/"+class, nil, nil, nil)
	if err == nil {
		return nil
	}
	if !isStatus(err, http.StatusNotFound) {
		return err
	}
	def := map[string]any{
		"class":       class,
		"description": description,
		"vectorizer":  "none",
		"properties":  props,
		// Async replication lets a replica that was down catch up by itself.
		"replicationConfig": map[string]any{"factor": b.opts.Replication, "asyncEnabled": b.opts.Replication > 1},
		"invertedIndexConfig": map[string]any{
			"bm25":           map[string]any{"k1": b.opts.BM25K1, "b": b.opts.BM25B},
			"stopwords":      map[string]any{"preset": "none"},
			"indexNullState": true,
		},
	}
	if b.opts.Shards > 0 {
		def["shardingConfig"] = map[string]any{"desiredCount": b.opts.Shards}
	}
	if dim > 0 {
		def["vectorIndexConfig"] = map[string]any{"distance": "cosine"}
	} else {
		def["vectorIndexConfig"] = map[string]any{"skip": true}
	}
	if err := b.c.do(ctx, http.MethodPost, "/v1/schema", nil, def, nil); err != nil {
		// Another client may have created it in between.
		if b.c.do(ctx, http.MethodGet, "/v1/schema/"+class, nil, nil, nil) == nil {
			return nil
		}
		return err
	}
	return nil
}

// Collection opens an existing collection.
func (b *Backend) Collection(ctx context.Context, name string) (memory.Collection, error) {
	class := b.className(name)
	var def struct {
		Description       string `json:"description"`
		ReplicationConfig struct {
			Factor int `json:"factor"`
		} `json:"replicationConfig"`
	}
	err := b.c.do(ctx, http.MethodGet, "/v1/schema/"+class, nil, nil, &def)
	if isStatus(err, http.StatusNotFound) {
		return nil, fmt.Errorf("%w: %q", memory.ErrNoCollection, name)
	}
	if err != nil {
		return nil, err
	}
	var spec memory.CollectionSpec
	if err := json.Unmarshal([]byte(def.Description), &spec); err != nil || spec.Name != name {
		return nil, fmt.Errorf("weaviate: class %s does not describe engram collection %q", class, name)
	}
	return &collection{b: b, class: class, spec: spec, replicated: def.ReplicationConfig.Factor > 1}, nil
}

// CreateCollection makes an empty collection for spec.
func (b *Backend) CreateCollection(ctx context.Context, spec memory.CollectionSpec) (memory.Collection, error) {
	if spec.Name == "" || spec.Dim <= 0 {
		return nil, fmt.Errorf("%w: collection needs a name and a positive dimension", memory.ErrInvalidInput)
	}
	if c, err := b.Collection(ctx, spec.Name); err == nil {
		if c.Spec() != spec {
			return nil, fmt.Errorf("weaviate: collection %q exists with another spec %+v", spec.Name, c.Spec())
		}
		return c, nil
	} else if !errors.Is(err, memory.ErrNoCollection) {
		return nil, err
	}
	desc, _ := json.Marshal(spec)
	class := b.className(spec.Name)
	if err := b.ensureClass(ctx, class, string(desc), memoryProperties, spec.Dim); err != nil {
		return nil, err
	}
	return b.Collection(ctx, spec.Name)
}

// DropCollection deletes a collection's class and its objects.
func (b *Backend) DropCollection(ctx context.Context, name string) error {
	err := b.c.do(ctx, http.MethodDelete, "/v1/schema/"+b.className(name), nil, nil, nil)
	if err != nil && !isStatus(err, http.StatusNotFound) {
		return err
	}
	return nil
}

// KV returns the durable key-value namespace.
func (b *Backend) KV() memory.KV { return b.kv }

// Close releases idle connections; the cluster keeps everything.
func (b *Backend) Close() error {
	b.c.http.CloseIdleConnections()
	return nil
}

// objectID derives a stable UUID for key within class.
func objectID(class, key string) string {
	sum := sha1.Sum([]byte(class + "\x00" + key))
	sum[6] = sum[6]&0x0f | 0x50 // version 5 layout
	sum[8] = sum[8]&0x3f | 0x80
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func readQuery(consistency string) url.Values { return url.Values{"consistency_level": {consistency}} }
