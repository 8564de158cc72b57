package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/onnx"
	"github.com/engramdb/engram/server"
)

func (a *app) adminCommands() []*cobra.Command {
	return []*cobra.Command{
		a.sessionsCommand(), a.statsCommand(), a.checkCommand(), a.repairCommand(), a.compactCommand(),
		a.cleanupCommand(), a.archiveCommand(), a.exportCommand(), a.importCommand(),
		a.backupCommand(), a.reembedCommand(), a.modelCommand(),
	}
}

func (a *app) sessionsCommand() *cobra.Command {
	return &cobra.Command{
		Use: "sessions", Short: "List sessions with their memory counts", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := ops.Sessions(cmd.Context())
			if err != nil {
				return err
			}
			ss := resp.Sessions
			if a.jsonOut {
				return a.printJSON(ss)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tMEMORIES\tNEWEST")
			for _, x := range ss {
				name := x.Name
				if name == "" {
					name = `""`
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\n", sanitize(name), x.Memories, x.Newest.UTC().Format(timeLayout))
			}
			return tw.Flush()
		},
	}
}

func (a *app) statsCommand() *cobra.Command {
	return &cobra.Command{
		Use: "stats", Short: "Show counts, sizes and the embedding model of the store", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ops, err := a.adminOps(cmd.Context())
			if err != nil {
				return err
			}
			st, dir, err := ops.stats(cmd.Context())
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(st)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			for _, row := range [][2]any{
				{"store", dir}, {"collection", st.Collection}, {"embedder", st.Fingerprint}, {"dimension", st.Dim},
				{"memories", st.Memories}, {"sessions", st.Sessions}, {"archived", st.Archived}, {"forgotten", st.Forgotten}, {"tasks", st.Tasks},
				{"disk bytes", st.Backend.DiskBytes}, {"segments", st.Backend.Segments}, {"wal bytes", st.Backend.WALBytes},
				{"memory bytes", st.Backend.MemBytes},
			} {
				fmt.Fprintf(tw, "%s\t%v\n", row[0], row[1])
			}
			return tw.Flush()
		},
	}
}

func (a *app) checkCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Verify checksums, index structure, the manifests and the WAL, without changing anything",
		Long: "check reads the whole store and writes nothing to it, like fsck -n: it replays the WAL in memory only,\n" +
			"and says what opening the store for writing would do (flush WAL records, cut a torn WAL tail, set aside\n" +
			"files that only look like the store's). A store held by `memctl serve` is checked by the server.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bar := a.lazyProgress("checking")
			res, err := a.check(cmd.Context(), bar.set)
			if err != nil {
				return err
			}
			switch res.Problem {
			case "":
			case "unreachable":
				// Intact files, but the vector graph leaves records out: not
				// corruption, and repair would not help.
				u := res.Unreachable
				return fmt.Errorf("files intact, but %d of %d memories in %s cannot be found by vector search "+
					"(keyword search, get and export still find them); `memctl compact` rebuilds the graph", u.Unreachable, u.Live, u.File)
			default:
				return fmt.Errorf("check failed: %s (try `memctl repair` after a backup)", res.Error)
			}
			if a.jsonOut {
				orEmpty := func(l []string) []string {
					if l == nil {
						return []string{}
					}
					return l
				}
				return a.printJSON(map[string]any{"ok": true, "unknown_files": orEmpty(res.Unknown),
					"actions": orEmpty(res.Actions), "notes": orEmpty(res.Notes)})
			}
			for _, name := range res.Unknown {
				fmt.Fprintf(a.stdout, "unknown %s: not written by engram; ignored, never removed\n", sanitize(name))
			}
			for _, line := range append(res.Actions, res.Notes...) {
				fmt.Fprintln(a.stdout, sanitize(line))
			}
			fmt.Fprintln(a.stdout, "ok")
			return nil
		},
	}
}

func (a *app) repairCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "repair",
		Short: "Make a damaged store openable: replace a damaged manifest, give up only damaged WAL records, rebuild damaged segments",
		Long: "repair works on a closed store (stop `memctl serve` first). A damaged or missing manifest is replaced\n" +
			"from the previous one (nothing is lost) or, when none is readable, rebuilt from seg/ and wal/. A damaged\n" +
			"WAL record becomes a hole (every intact record after it is kept; its bytes are kept in\n" +
			"wal/NNNNNNNN.OFFSET.lost), and segments that fail their checks are rebuilt from their intact records\n" +
			"(graph, postings and columns are derived and rebuilt); only records whose own data is destroyed are lost,\n" +
			"listed, and exported to seg/NAME.lost; a file that lost records is kept as seg/NAME.corrupt. Files named\n" +
			"like WAL segments that are not are set aside as NAME.foreign. Take a backup of the directory first if you\n" +
			"can. On a healthy store it changes nothing.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := a.storeKey()
			if err != nil {
				return err
			}
			rep, err := engine.Repair(a.dir, engine.Options{Key: key})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(rep)
			}
			if len(rep.WALLost) == 0 && len(rep.RebuiltSegments) == 0 && len(rep.MissingSegments) == 0 &&
				len(rep.QuarantinedSegments) == 0 && len(rep.DamagedManifests) == 0 && !rep.RebuiltManifest &&
				len(rep.MissingWAL) == 0 && len(rep.ObsoleteWALRemoved) == 0 && len(rep.UnusableFallback) == 0 &&
				len(rep.SetAside) == 0 {
				fmt.Fprintln(a.stdout, "store is healthy; nothing changed")
				return nil
			}
			for _, f := range rep.DamagedManifests {
				fmt.Fprintf(a.stdout, "%s was damaged or missing: replaced from the newest readable manifest\n", f)
			}
			if rep.RebuiltManifest {
				fmt.Fprintln(a.stdout, "no manifest was readable: rebuilt from seg/ and wal/ (deletes and access counts older than the WAL are lost)")
			}
			for _, f := range rep.MissingWAL {
				fmt.Fprintf(a.stdout, "WAL segment %s was missing: the writes it held after the last flush are lost; the log goes on after it\n", f)
			}
			for _, f := range rep.ObsoleteWALRemoved {
				fmt.Fprintf(a.stdout, "WAL segment %s was damaged but wholly flushed: removed, nothing lost\n", f)
			}
			for _, f := range rep.UnusableFallback {
				fmt.Fprintf(a.stdout, "%s could no longer serve as a fallback (a file or WAL segment it needs is gone): removed, nothing lost\n", f)
			}
			for _, f := range rep.SetAside {
				fmt.Fprintf(a.stdout, "%s: named like a WAL segment, but not one: set aside, nothing lost\n", sanitize(f))
			}
			if rep.SkippedOps > 0 {
				fmt.Fprintf(a.stdout, "%d WAL records named a collection that is gone and were skipped\n", rep.SkippedOps)
			}
			for _, l := range rep.WALLost {
				fmt.Fprintf(a.stdout, "WAL damaged at %v (%d bytes, %s): the records there are lost, every intact record after them kept\n", l.LSN, l.Bytes, l.Cause)
				if l.Saved != "" {
					fmt.Fprintf(a.stdout, "  its bytes, as they were: %s\n", l.Saved)
				}
			}
			for _, seg := range rep.RebuiltSegments {
				fmt.Fprintf(a.stdout, "segment %s was damaged: its intact records were rewritten with everything derived rebuilt\n", seg)
			}
			for _, seg := range rep.QuarantinedSegments {
				fmt.Fprintf(a.stdout, "segment %s lost records: kept aside as %s.corrupt\n", seg, filepath.Base(seg))
			}
			for _, seg := range rep.MissingSegments {
				fmt.Fprintf(a.stdout, "segment %s is missing: removed from the manifest\n", seg)
			}
			for _, l := range rep.LostRecords {
				id := l.ID
				if !l.IDKnown {
					id += " (id bytes damaged)"
				}
				fmt.Fprintf(a.stdout, "lost record %q (node %d of %s)\n", id, l.Node, filepath.Base(l.Segment))
			}
			for _, q := range rep.QuarantineFiles {
				fmt.Fprintf(a.stdout, "what is readable of the lost records: %s (JSON lines)\n", q)
			}
			if rep.DroppedRecords > 0 {
				fmt.Fprintf(a.stdout, "%d records were lost; restore them from a backup or export\n", rep.DroppedRecords)
			}
			return nil
		},
	}
}

func (a *app) compactCommand() *cobra.Command {
	return &cobra.Command{
		Use: "compact", Short: "Flush, then merge segments and drop deleted records to give disk back", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ops, err := a.adminOps(cmd.Context())
			if err != nil {
				return err
			}
			bar := a.lazyProgress("compacting")
			res, err := ops.compact(cmd.Context(), bar.set)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"before": res.Before, "after": res.After})
			}
			fmt.Fprintf(a.stdout, "disk %d -> %d bytes, segments %d -> %d\n", res.Before.DiskBytes, res.After.DiskBytes, res.Before.Segments, res.After.Segments)
			return nil
		},
	}
}

func (a *app) cleanupCommand() *cobra.Command {
	var (
		dryRun, includeRecalled bool
		olderThan               string
		session                 string
		ff                      filterFlags
	)
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Move stale memories (default: older than 180 days, never recalled) to the cold archive",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter, err := ff.filter(cmd, time.Now())
			if err != nil {
				return err
			}
			req := api.CleanupRequest{DryRun: dryRun, IncludeRecalled: includeRecalled, OlderThan: olderThan, Filter: filter}
			if olderThan != "" {
				if _, err := parseAge(olderThan); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("session") {
				req.Session = &session
			}
			ops, err := a.adminOps(cmd.Context())
			if err != nil {
				return err
			}
			bar := a.lazyProgress("archiving")
			res, err := ops.cleanup(cmd.Context(), req, bar.set)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(res)
			}
			verb := "archived"
			if dryRun {
				verb = "would archive"
			}
			fmt.Fprintf(a.stdout, "%s %d memories\n", verb, len(res.Memories))
			for _, m := range res.Memories {
				fmt.Fprintf(a.stdout, "  %s  %s  %s\n", m.ID, m.Updated.UTC().Format("2006-01-02"), oneLine(m.Text, 60))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&dryRun, "dry-run", false, "list what would move and change nothing")
	f.BoolVar(&includeRecalled, "include-recalled", false, "also move memories that were recalled")
	f.StringVar(&olderThan, "older-than", "", "age threshold, e.g. 180d, 12h (default 180d)")
	f.StringVarP(&session, "session", "s", "", "only this session")
	ff.add(f)
	return cmd
}

// parseAge accepts Go durations plus a "d" suffix for days.
func parseAge(s string) (time.Duration, error) {
	d, err := memory.ParseAge(s)
	if err != nil {
		return 0, usagef("%v", err)
	}
	return d, nil
}

func (a *app) archiveCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "archive", Short: "The cold archive: list and restore memories moved by cleanup"}
	list := &cobra.Command{Use: "list", Short: "List archived memories", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ops, err := a.adminOps(cmd.Context())
			if err != nil {
				return err
			}
			ms, err := ops.archived(cmd.Context())
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(ms)
			}
			if len(ms) == 0 {
				fmt.Fprintln(a.stdout, "(archive is empty)")
			}
			for _, m := range ms {
				fmt.Fprintf(a.stdout, "%s  %s  %s\n", m.ID, sanitize(m.Session), oneLine(m.Text, 70))
			}
			return nil
		}}
	var all bool
	restore := &cobra.Command{Use: "restore [ID...]", Short: "Restore archived memories (--all for every one)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !all {
				return usagef("restore needs memory IDs or --all")
			}
			ops, err := a.adminOps(cmd.Context())
			if err != nil {
				return err
			}
			if all {
				args = nil // unknown IDs fail the restore, naming them, before anything is restored
			}
			bar := a.lazyProgress("restoring")
			n, err := ops.restore(cmd.Context(), args, bar.set)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]int{"restored": n})
			}
			fmt.Fprintf(a.stdout, "restored %d memories\n", n)
			return nil
		}}
	restore.Flags().BoolVar(&all, "all", false, "restore every archived memory")
	cmd.AddCommand(list, restore)
	return cmd
}

// memoryJSON is the export line format: one memory, vector optional (the
// service's format, so that export and import work through it too).
type memoryJSON = server.MemoryJSON

func (a *app) exportCommand() *cobra.Command {
	var vectors, encrypt bool
	var out, session string
	var ff filterFlags
	var sk sealKeyFlags
	cmd := &cobra.Command{
		Use: "export", Short: "Write every memory, conversation and task as JSON Lines (stdout or --out; docs/format/export.md)", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter, err := ff.filter(cmd, time.Now())
			if err != nil {
				return err
			}
			ops, err := a.adminOps(cmd.Context())
			if err != nil {
				return err
			}
			w := a.exactStdout()
			var seal *engine.Key
			if encrypt {
				if out == "" || out == "-" {
					return &usageError{"export --encrypt writes a binary file: give --out FILE"}
				}
				if seal, err = a.readSealKey(sk, true); err != nil {
					return err
				}
			}
			var f *os.File
			if out != "" && out != "-" {
				if f, err = os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
					return err
				}
				w = f
			}
			var sealed io.WriteCloser
			if seal != nil {
				if sealed, err = engine.NewSealedWriter(f, seal); err != nil {
					f.Close()
					os.Remove(out)
					return err
				}
				w = sealed
			}
			bw := bufio.NewWriter(w)
			var sess *string
			if cmd.Flags().Changed("session") {
				sess = &session
			}
			n, convs, tasks, err := ops.export(cmd.Context(), bw, sess, filter, vectors)
			if err == nil {
				err = bw.Flush()
			}
			if err == nil && sealed != nil {
				err = sealed.Close()
			}
			if f != nil {
				if err == nil {
					err = f.Sync()
				}
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return err
			}
			if out != "" && out != "-" {
				fmt.Fprintf(a.stderr, "exported %d memories, %d conversations and %d tasks to %s\n", n, convs, tasks, out)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&vectors, "vectors", false, "include the embedding vectors")
	cmd.Flags().BoolVar(&encrypt, "encrypt", false, "seal the file with a passphrase or key file of its own (needs --out; import asks for it)")
	sk.add(cmd)
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to this new file (0600) instead of stdout")
	cmd.Flags().StringVarP(&session, "session", "s", "", "only this session")
	ff.add(cmd.Flags()) // with a filter, only the memories it selects (no conversations or tasks)
	return cmd
}

// importBatch is how many memories one Import call writes.
const importBatch = 256

func (a *app) importCommand() *cobra.Command {
	var foreign foreignImport
	var sk sealKeyFlags
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Import memories, conversations and tasks from JSON Lines written by export (- for stdin); IDs and times are kept",
		Long: "import reads an export file (docs/format/export.md), or with --from where memories live today:\n" +
			"  --from chroma DIR   a Chroma persist directory (chroma.sqlite3 and its hnswlib segments; read-only)\n" +
			"  --from mem0 FILE    the JSON of mem0's get_all (a list, or {\"results\": [...]}; - for stdin)\n" +
			"Records get IDs derived from their source IDs, so running the same import again (after an\n" +
			"interruption, say) writes only what is missing. At the end it reports where each source key went\n" +
			"and what it could not map (docs/format/import.md).",
		Args: exactArgs(1, "import takes one FILE (or - for stdin), or with --from chroma a DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := foreign.check(cmd); err != nil {
				return err
			}
			if foreign.from != "engram" {
				return foreign.run(cmd, a, args[0])
			}
			var r io.Reader = a.stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			r, err := a.unsealImport(r, sk)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			// Parse everything first: a bad line fails the import before anything is written.
			ms, recs, err := memory.ReadExportFile(r)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			ops, err := a.adminOps(cmd.Context())
			if err != nil {
				return err
			}
			bar := a.lazyProgress("importing")
			if err := ops.importMemories(cmd.Context(), ms, recs, bar.set); err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]int{"imported": len(ms), "records": len(recs)})
			}
			fmt.Fprintf(a.stdout, "imported %d memories, %d conversations and tasks\n", len(ms), len(recs))
			return nil
		},
	}
	foreign.add(cmd)
	sk.add(cmd)
	return cmd
}

func (a *app) backupCommand() *cobra.Command {
	var serverSide, withKeys bool
	cmd := &cobra.Command{
		Use: "backup DIR", Short: "Copy the store consistently into a new directory while it is open",
		Long: "backup copies the store into DIR, a new or empty directory. When a running `memctl serve` holds the\n" +
			"store, the copy streams from it into DIR here; with --server-side, DIR is a directory under the server's\n" +
			"--backup-root instead and the copy stays on the server.",
		Args: exactArgs(1, "backup takes the destination directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ops, err := a.adminOps(cmd.Context())
			if err != nil {
				return err
			}
			if serverSide {
				r, ok := ops.(*remoteOps)
				if !ok {
					return usagef("--server-side needs a running server (it holds the store, or --server names it)")
				}
				dir, err := r.serverBackup(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(map[string]any{"backup": dir, "server_side": true})
				}
				fmt.Fprintf(a.stdout, "backed up to %s on the server\n", dir)
				return nil
			}
			if withKeys {
				l, ok := ops.(*localOps)
				if !ok {
					return usagef("--with-keys copies the KEYS file of a store opened here; a server's backups never carry it")
				}
				if err := l.s.BackupWithKeys(cmd.Context(), args[0]); err != nil {
					return err
				}
			} else {
				bar := a.lazyBytes("backing up")
				if err := ops.backup(cmd.Context(), args[0], bar.set); err != nil {
					return err
				}
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"backup": args[0], "server_side": false})
			}
			fmt.Fprintf(a.stdout, "backed up to %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&serverSide, "server-side", false, "write the backup on the server, under its --backup-root")
	cmd.Flags().BoolVar(&withKeys, "with-keys", false, "encrypted store: copy its KEYS file too, so the backup opens on its own (a backup without it needs the store's KEYS, and loses what is purged later)")
	return cmd
}

func (a *app) reembedCommand() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "reembed --to EMBEDDER",
		Short: "Re-embed every memory from its stored text with another model (resumable)",
		Long: "reembed migrates the store to another embedding model: it opens the store with its recorded embedder\n" +
			"(or --embedder), embeds every memory's stored text with --to into a new collection and switches over\n" +
			"atomically. After an interruption, run the same command again: it resumes. Through a running server,\n" +
			"--to names a model on the server's machine.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return usagef("reembed needs --to (lexical, onnx:DIR or ollama:MODEL)")
			}
			ops, err := a.adminOps(cmd.Context())
			if err != nil {
				return err
			}
			bar := a.lazyProgress("re-embedding")
			fp, err := ops.reembed(cmd.Context(), to, bar.set)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]string{"embedder": to, "fingerprint": fp})
			}
			fmt.Fprintf(a.stdout, "re-embedded with %s (%s); later commands use it without --embedder\n", to, fp)
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the new embedder")
	return cmd
}

func (a *app) modelCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "model", Short: "Get and inspect embedding models"}
	var hub, revision string
	var int8 bool
	pull := &cobra.Command{
		Use:   "pull bge-m3 [DIR]",
		Short: "Download BGE-M3 (ONNX) and its tokenizer into DIR (default DATA_DIR/models/bge-m3, or bge-m3-int8 with --int8), with sha256 checks and resume",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("model pull takes a model name (bge-m3) and an optional directory")
			}
			if args[0] != "bge-m3" {
				return usagef("unknown model %q: this version can pull bge-m3", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, name := onnx.BGEM3, "bge-m3"
			if int8 {
				opts, name = onnx.BGEM3Int8, "bge-m3-int8"
			}
			dir := filepath.Join(defaultDataDir(), "models", name)
			if len(args) == 2 {
				dir = args[1]
			}
			opts.Dir = dir
			if hub != "" {
				opts.BaseURL = hub
			}
			if revision != "" {
				opts.Revision = revision
			}
			bars := map[string]interface{ Set64(int64) error }{}
			opts.Progress = func(p onnx.PullProgress) {
				b, ok := bars[p.File]
				if !ok {
					b = a.byteProgress(p.Total, p.File)
					bars[p.File] = b
				}
				b.Set64(p.Done)
			}
			files, err := onnx.Pull(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(files)
			}
			fmt.Fprintf(a.stdout, "model in %s; use it with --embedder onnx:%s\n", dir, dir)
			return nil
		},
	}
	pull.Flags().StringVar(&hub, "hub", "", "hub base URL (default "+onnx.DefaultHubURL+")")
	pull.Flags().StringVar(&revision, "revision", "", "branch, tag or commit (default main)")
	pull.Flags().BoolVar(&int8, "int8", false, "the int8-quantized export ("+onnx.BGEM3Int8.Repo+"): about 3x faster on a CPU, "+
		"vectors within cosine 0.99 of fp32, a model (fingerprint) of its own")
	info := &cobra.Command{
		Use: "info [DIR]", Short: "Load a model directory and print its dimension, pooling and fingerprint (default: the --embedder)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("model info takes at most one directory")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			spec := a.embedderFor(nil)
			if len(args) == 1 {
				spec = "onnx:" + args[0]
			}
			e, err := a.newEmbedder(spec)
			if err != nil {
				return err
			}
			if c, ok := e.(io.Closer); ok {
				defer c.Close()
			}
			info := map[string]any{"embedder": spec, "dim": e.Dim(), "fingerprint": e.Fingerprint()}
			if p, ok := e.(interface{ Provider() string }); ok {
				info["provider"] = p.Provider()
			}
			if a.jsonOut {
				return a.printJSON(info)
			}
			for _, k := range []string{"embedder", "dim", "fingerprint", "provider"} {
				if v, ok := info[k]; ok {
					fmt.Fprintf(a.stdout, "%-12s %v\n", k, v)
				}
			}
			return nil
		},
	}
	cmd.AddCommand(pull, info)
	return cmd
}
