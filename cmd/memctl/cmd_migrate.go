package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/migrate"
	"github.com/engramdb/engram/weaviate"
)

// isRemote reports whether a --dir value names a Weaviate cluster
// (weaviate://HOST:PORT) instead of a local directory.
func isRemote(dir string) bool {
	return strings.HasPrefix(dir, "weaviate://") || strings.HasPrefix(dir, "weaviates://")
}

// weaviateOptions are the cluster settings shared by --dir weaviate:// and migrate.
func (a *app) weaviateOptions() weaviate.Options {
	return weaviate.Options{Token: a.weaviateToken, Replication: a.replication}
}

// openRemote opens a store whose memories live in a Weaviate cluster.
func (a *app) openRemote(url string, opts memory.Options, from func(*memory.EmbedderSpec) (memory.Embedder, error)) (*memory.Store, error) {
	b, err := weaviate.Open(context.Background(), url, a.weaviateOptions())
	if err != nil {
		return nil, err
	}
	var rec *memory.EmbedderSpec
	spec, ok, err := memory.RecordedEmbedder(b)
	if ok {
		rec = &spec
	}
	if err == nil {
		opts.Embedder, err = from(rec)
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	s, err := memory.New(context.Background(), b, opts)
	if err != nil {
		b.Close()
		return nil, err
	}
	a.closeBackend = b.Close
	return s, nil
}

func (a *app) migrateCommand() *cobra.Command {
	var to string
	var samples int
	cmd := &cobra.Command{
		Use:   "migrate --to weaviate://HOST:PORT",
		Short: "Copy the local store into a Weaviate cluster (resumable), then verify counts, IDs and sample recalls",
		Long: "migrate copies the store in --dir, memories with their vectors and metadata plus short-term and\n" +
			"working memory, into a Weaviate cluster, in batches. An interrupted migration resumes when run\n" +
			"again. At the end it checks that counts match, every ID arrived and sampled recalls agree;\n" +
			"afterwards use the cluster with --dir weaviate://HOST:PORT.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !isRemote(to) {
				return usagef("--to must be weaviate://HOST:PORT")
			}
			if isRemote(a.dir) {
				return usagef("--dir must be a local store to migrate from")
			}
			ctx := cmd.Context()
			key, err := a.storeKey()
			if err != nil {
				return err
			}
			// What leaves the machine leaves decrypted (encryption.md).
			db, err := engine.Open(filepath.Clean(a.dir), engine.Options{Key: key})
			if err != nil {
				return fmt.Errorf("opening store %s: %w", a.dir, err)
			}
			srcB := memory.NewEngineBackend(db)
			defer srcB.Close()
			var rec *memory.EmbedderSpec
			if r, ok, err := memory.RecordedEmbedder(srcB); err != nil {
				return err
			} else if ok {
				rec = &r
			}
			used := a.embedderFor(rec)
			emb, err := a.newEmbedder(used)
			if err != nil {
				return err
			}
			src, err := memory.New(ctx, srcB, memory.Options{Embedder: emb})
			if err != nil {
				return a.explainMismatch(err, used, rec)
			}
			st, err := src.Stats(ctx)
			if err != nil {
				return err
			}
			dstB, err := weaviate.Open(ctx, to, a.weaviateOptions())
			if err != nil {
				return err
			}
			defer dstB.Close()
			bar := a.progress(int64(st.Memories), "migrating")
			spec := memory.CollectionSpec{Name: st.Collection, Dim: st.Dim, Fingerprint: st.Fingerprint}
			rep, err := migrate.Copy(ctx, srcB, dstB, spec, migrate.Options{Progress: func(done, _ int) { bar.Set(done) }})
			if err != nil {
				return fmt.Errorf("%w (run the same command again to resume)", err)
			}
			dst, err := memory.New(ctx, dstB, memory.Options{Embedder: emb})
			if err != nil {
				return err
			}
			queries, err := sampleQueries(ctx, src, samples)
			if err != nil {
				return err
			}
			v, err := migrate.Verify(ctx, src, dst, queries, memory.RecallOptions{})
			if err != nil {
				return err
			}
			if a.jsonOut {
				if err := a.printJSON(map[string]any{"copy": rep, "verify": v}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "copied %d memories (%d resumed from an earlier run) and %d KV entries to %s\n", rep.Copied, rep.Resumed, rep.KVKeys, to)
				fmt.Fprintf(a.stdout, "verify: %d memories here, %d there, %d missing; %d/%d sampled recalls agree on the top memory\n",
					v.SourceCount, v.DestCount, len(v.Missing), v.Agree, v.Compared)
			}
			if !v.OK() {
				return migrate.ErrNotVerified
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "destination cluster, weaviate://HOST:PORT")
	cmd.Flags().IntVar(&samples, "samples", 50, "recalls compared between the stores after copying")
	return cmd
}

// sampleQueries picks n memories at random and uses the start of each text
// as a query.
func sampleQueries(ctx context.Context, s *memory.Store, n int) ([]string, error) {
	rng := rand.New(rand.NewPCG(42, 42))
	var out []string
	seen := 0
	err := s.Scan(ctx, nil, func(m memory.Memory) error { // reservoir sampling
		seen++
		q := m.Text
		if utf8.RuneCountInString(q) > 40 {
			q = string([]rune(q)[:40])
		}
		if len(out) < n {
			out = append(out, q)
		} else if j := rng.IntN(seen); j < n {
			out[j] = q
		}
		return nil
	})
	return out, err
}
