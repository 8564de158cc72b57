package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/importer"
	"github.com/engramdb/engram/importer/chroma"
	"github.com/engramdb/engram/importer/mem0"
	"github.com/engramdb/engram/memory"
)

// foreignImport holds import's flags for --from chroma and --from mem0 (package importer;
// docs/format/import.md).
type foreignImport struct {
	from        string
	collections []string
	session     string
	sessionKey  string
	vectors     string
	dryRun      bool
}

func (f *foreignImport) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "engram", "what FILE is: engram (an export file), chroma (a Chroma persist directory) or mem0 (a get_all JSON dump)")
	fl.StringArrayVar(&f.collections, "collection", nil, "chroma: the collection to import, by name (repeatable; '*' for all; needed when there are several)")
	fl.StringVarP(&f.session, "session", "s", "", "chroma, mem0: put every memory into this session (default: the collection's name; mem0's user_id, agent_id or run_id)")
	fl.StringVar(&f.sessionKey, "session-key", "", "chroma: the record metadata key whose value is the session (records without it: the collection's name)")
	fl.StringVar(&f.vectors, "vectors", "auto", "chroma: use the source's vectors: auto (when the collection names the store's model), keep (whenever the dimension is the store's) or reembed (never)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "chroma, mem0: read and map, print the report, write nothing")
}

// check refuses the foreign-import flags where they do not apply.
func (f *foreignImport) check(cmd *cobra.Command) error {
	fl := cmd.Flags()
	switch f.from {
	case "engram", "":
		for _, name := range []string{"collection", "session", "session-key", "vectors", "dry-run"} {
			if fl.Changed(name) {
				return usagef("--%s applies to --from chroma or mem0", name)
			}
		}
	case "mem0":
		for _, name := range []string{"collection", "session-key", "vectors"} {
			if fl.Changed(name) {
				return usagef("--%s applies to --from chroma", name)
			}
		}
	case "chroma":
		if fl.Changed("session") && fl.Changed("session-key") {
			return usagef("give --session or --session-key, not both")
		}
	default:
		return usagef("--from %q: want engram, chroma or mem0", f.from)
	}
	if _, err := importer.ParseVectorPolicy(f.vectors); err != nil {
		return usagef("--%v", err)
	}
	return nil
}

// run imports from a Chroma directory or a mem0 dump: read and map everything first (a
// malformed source fails before the store is touched), then write what the store does not
// hold yet, with progress, and print the report.
func (f *foreignImport) run(cmd *cobra.Command, a *app, path string) error {
	ctx := cmd.Context()
	var session *string
	if cmd.Flags().Changed("session") {
		session = &f.session
	}
	var (
		ms  []memory.Memory
		rep *importer.Report
		ops adminOps
		err error
	)
	switch f.from {
	case "mem0":
		var r io.Reader = a.stdin
		name := "stdin"
		if path != "-" {
			fh, err := os.Open(path)
			if err != nil {
				return err
			}
			defer fh.Close()
			r, name = fh, path
		}
		if ms, rep, err = mem0.Read(r, name, mem0.Options{Session: session}); err != nil {
			return err
		}
		if !f.dryRun {
			if ops, err = a.adminOps(ctx); err != nil {
				return err
			}
		}
	case "chroma":
		db, err := chroma.Open(path)
		if err != nil {
			return err
		}
		defer db.Close()
		if ops, err = a.adminOps(ctx); err != nil {
			return err
		}
		model, err := storeModel(ctx, ops)
		if err != nil {
			return err
		}
		policy, _ := importer.ParseVectorPolicy(f.vectors)
		ms, rep, err = db.Read(ctx, chroma.Options{Collections: f.collections, Session: session, SessionKey: f.sessionKey,
			Vectors: policy, Model: model})
		if err != nil {
			return err
		}
	}
	if !f.dryRun {
		bar := a.lazyProgress("importing")
		err = importer.Write(ctx, opsTarget{ops}, ms, importer.WriteOptions{Batch: importBatch,
			Progress: func(done, total int) { bar.set(int64(done), int64(total)) }}, rep)
	}
	// The report goes out even after a failed write: it says how far the import got.
	var perr error
	if a.jsonOut {
		perr = a.printJSON(rep)
	} else {
		if f.dryRun {
			fmt.Fprintln(a.stdout, "dry run: nothing written")
		}
		perr = rep.WriteSummary(a.stdout)
	}
	if err != nil {
		return err
	}
	return perr
}

// storeModel describes the embedder of the store ops writes to.
func storeModel(ctx context.Context, ops adminOps) (importer.Model, error) {
	switch o := ops.(type) {
	case *localOps:
		emb := o.s.Embedder()
		m := importer.Model{Fingerprint: emb.Fingerprint(), Dim: emb.Dim()}
		if spec, ok, err := o.s.RecordedEmbedder(); err == nil && ok && spec.Fingerprint == m.Fingerprint {
			m.Spec = spec.String()
		}
		return m, nil
	default:
		st, _, err := ops.stats(ctx)
		if err != nil {
			return importer.Model{}, err
		}
		return importer.Model{Fingerprint: st.Fingerprint, Dim: st.Dim}, nil
	}
}

// opsTarget is an importer.Target over the store here or the server that holds it.
type opsTarget struct{ ops adminOps }

func (t opsTarget) Existing(ctx context.Context, ids []string) (map[string]bool, error) {
	switch o := t.ops.(type) {
	case *localOps:
		return importer.StoreTarget{Store: o.s}.Existing(ctx, ids)
	case *remoteOps:
		ms, err := o.c.get(ctx, ids, false)
		if err != nil {
			return nil, err
		}
		have := make(map[string]bool, len(ms))
		for _, m := range ms {
			have[m.ID] = true
		}
		return have, nil
	}
	return nil, fmt.Errorf("import: no store to write to")
}

func (t opsTarget) Import(ctx context.Context, ms []memory.Memory) error {
	return t.ops.importMemories(ctx, ms, nil, func(int64, int64) {})
}
