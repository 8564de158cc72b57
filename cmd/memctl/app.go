package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
)

// app holds what one memctl invocation shares between its commands: the
// streams, the resolved global settings and the store, opened lazily.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	rawStdout      io.Writer      // stdout before afterConfig wrapped it, or nil
	cmd            *cobra.Command // the command running (checkStoreDir)

	dir        string
	configPath string
	jsonOut    bool
	embedder   string
	ollamaURL  string

	weaviateToken string
	replication   int

	shortTermTokens int
	summarizer      string
	distiller       string
	forgetRetention string // how long forgotten memories stay restorable (trash.go)

	server    string // run commands through this server's API (client.go)
	serverKey string

	store        *memory.Store
	closeBackend func() error

	engineOpts engine.Options // tests: a file system that fails on purpose

	// encryption at rest (cmd_crypt.go)
	encrypt                 bool // init --encrypt
	passphraseFile, keyFile string
	// readOnly opens the store without writing to it (engine.Options.ReadOnly): check.
	readOnly bool
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "memctl",
		Short: "Administer and serve engram memory stores",
		Long: "memctl administers engram memory stores: remember and recall memories, inspect and repair the store,\n" +
			"and serve it over HTTP or MCP. Start with `memctl quickstart`.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.cmd = cmd
			// The user owns a store this process opens: the request layer runs for
			// them as LocalCaller (through a server, the server's key decides).
			cmd.SetContext(api.WithCaller(cmd.Context(), api.LocalCaller))
			if err := a.resolveConfig(cmd); err != nil {
				return err
			}
			a.afterConfig(cmd)
			return nil
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.dir, "dir", defaultDataDir(), "store directory")
	pf.StringVar(&a.configPath, "config", defaultConfigPath(), "JSON config file (keys are flag names)")
	pf.BoolVar(&a.jsonOut, "json", false, "print JSON for scripts")
	pf.StringVar(&a.embedder, "embedder", "", "embedder: lexical (built in), onnx:MODEL_DIR, or ollama:MODEL (default: the one the store recorded, else lexical)")
	pf.StringVar(&a.ollamaURL, "ollama-url", "", "Ollama server address (default $OLLAMA_HOST or http://127.0.0.1:11434)")
	pf.StringVar(&a.weaviateToken, "weaviate-token", "", "API key for a Weaviate cluster (--dir weaviate://... or migrate)")
	pf.IntVar(&a.replication, "replication", 1, "replication factor of collections created in a Weaviate cluster")
	pf.IntVar(&a.shortTermTokens, "short-term-tokens", 0, fmt.Sprintf("token budget of a session's conversation buffer (default %d)", memory.DefaultShortTermTokens))
	pf.StringVar(&a.forgetRetention, "forget-retention", "30d", "how long forgotten memories stay restorable (memctl restore) before they are deleted for good; 0 makes forgetting final")
	pf.StringVar(&a.summarizer, "summarizer", "extractive", "how old turns are compressed: extractive (built in) or ollama:MODEL")
	pf.StringVar(&a.distiller, "distiller", "rules", "how turns become long-term memories: rules (built in) or ollama:MODEL (the built-in rules stand in when the model fails)")
	pf.StringVar(&a.server, "server", "", "run commands through this memctl serve (http://HOST:PORT); by default they do when the server holds --dir")
	pf.StringVar(&a.passphraseFile, "passphrase-file", "", "file holding the passphrase of an encrypted store (else $ENGRAM_PASSPHRASE, $ENGRAM_KEY_FILE or a prompt)")
	pf.StringVar(&a.keyFile, "key-file", "", "key file of an encrypted store (memctl keyfile makes one)")
	pf.StringVar(&a.serverKey, "server-token", "", "token or API key sent to the server (default $ENGRAM_TOKEN)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })

	root.AddCommand(
		a.quickstartCommand(),
		a.initCommand(),
		a.rememberCommand(),
		a.recallCommand(),
		a.forgetCommand(), a.restoreCommand(), a.forgottenCommand(), // cmd_trash.go
		a.tasksCommand(),
		a.contextCommand(),
		a.getCommand(), a.listCommand(), a.updateCommand(), a.historyCommand(), // cmd_get.go
		a.changeKeyCommand(), a.rotateKeysCommand(), a.keyFileCommand(), // cmd_crypt.go
	)
	root.AddCommand(a.adminCommands()...)
	root.AddCommand(a.serviceCommands()...)
	return root
}

// isCobraUsageError recognizes the command-line errors cobra itself returns
// untyped (unknown commands, wrong argument counts).
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "requires exactly", "unknown flag", "invalid argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "engram")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "engram")
	}
	return "engram-data"
}

func defaultConfigPath() string {
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "engram", "config.json")
	}
	return ""
}

// envName is the environment variable that sets flag name.
func envName(flag string) string {
	return "ENGRAM_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// resolveConfig fills every flag the command line left unset from the
// environment, then from the config file: flags > env > file > defaults.
func (a *app) resolveConfig(cmd *cobra.Command) error {
	flags := cmd.Flags()
	if !flags.Changed("config") {
		if v, ok := os.LookupEnv(envName("config")); ok {
			a.configPath = v
		}
	}
	file, err := loadConfigFile(a.configPath, flags.Changed("config") || os.Getenv(envName("config")) != "")
	if err != nil {
		return err
	}
	var setErr error
	flags.VisitAll(func(f *pflag.Flag) {
		if setErr != nil || f.Changed || f.Name == "config" || f.Name == "help" {
			return
		}
		v, ok := os.LookupEnv(envName(f.Name))
		src := envName(f.Name)
		if !ok {
			v, ok = file[f.Name]
			src = fmt.Sprintf("%s in %s", f.Name, a.configPath)
		}
		if ok {
			if err := f.Value.Set(v); err != nil {
				setErr = usagef("invalid value %q for %s: %v", v, src, err)
			}
		}
	})
	return setErr
}

// loadConfigFile reads the JSON config file as flag name -> value. A missing
// file is fine unless the user named it explicitly.
func loadConfigFile(path string, explicit bool) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) && !explicit {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("config file %s is not a JSON object: %w", path, err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case string:
			out[k] = v
		case bool, float64:
			out[k] = fmt.Sprint(v)
		default:
			return nil, fmt.Errorf("config file %s: key %q must be a string, number or boolean", path, k)
		}
	}
	return out, nil
}

// openStore opens the store in a.dir once per invocation.
func (a *app) openStore() (*memory.Store, error) { return a.openStoreWith(memory.Options{}) }

// openStoreWith opens the store with opts, the embedder taken from --embedder or else the one
// the store recorded (see storeembedder.go), and records it.
func (a *app) openStoreWith(opts memory.Options) (*memory.Store, error) {
	if a.store != nil {
		return a.store, nil
	}
	if opts.Logger == nil { // warnings the store handles itself (a recall's access not recorded)
		opts.Logger = slog.New(slog.NewTextHandler(a.stderr, nil))
	}
	opts, err := a.shortTermOptions(opts)
	if err != nil {
		return nil, err
	}
	if opts.ForgetRetention == 0 {
		if opts.ForgetRetention, err = a.retention(); err != nil {
			return nil, err
		}
	}
	var used string
	var rec *memory.EmbedderSpec
	var given memory.Embedder
	if a.embedder != "" { // a bad --embedder fails before anything is opened or created
		e, err := a.newEmbedder(a.embedder)
		if err != nil {
			return nil, err
		}
		given = e
	}
	from := func(r *memory.EmbedderSpec) (memory.Embedder, error) {
		rec, used = r, a.embedderFor(r)
		if given != nil {
			return given, nil
		}
		return a.newEmbedder(used)
	}
	if err := a.checkStoreDir(); err != nil {
		return nil, err
	}
	var s *memory.Store
	if isRemote(a.dir) {
		s, err = a.openRemote(a.dir, opts, from)
	} else {
		eo := a.engineOpts
		if eo.Logger == nil { // what the engine repairs by itself at open (a torn WAL tail cut)
			eo.Logger = opts.Logger
		}
		eo.ReadOnly = eo.ReadOnly || a.readOnly
		if eo.Key == nil {
			if eo.Key, err = a.storeKey(); err != nil {
				return nil, err
			}
		}
		s, err = memory.Open(a.dir, memory.OpenOptions{Options: opts, EmbedderFrom: from, Engine: eo})
	}
	if err != nil {
		hint := ""
		if errors.Is(err, engine.ErrNotStore) {
			hint = legacyQuickstartHint(a.dir)
		}
		return nil, fmt.Errorf("opening store %s: %w%s", a.dir, a.explainMismatch(err, used, rec), hint)
	}
	if !a.readOnly {
		a.recordEmbedder(s, used)
	}
	a.store = s
	return s, nil
}

// close closes the store; its error (a final flush that failed) makes the
// command fail: what it wrote is in the WAL, but the user must hear of it.
func (a *app) close() error {
	var err error
	if a.store != nil {
		if err = a.store.Close(); err != nil {
			err = fmt.Errorf("closing store: %w", err)
		}
		a.store = nil
	}
	if a.closeBackend != nil {
		a.closeBackend()
		a.closeBackend = nil
	}
	return err
}

// printJSON writes v as indented JSON to stdout: every --json answer goes
// through here. Characters a terminal acts on are \u escapes (jsonSafe), so
// the output is safe to show and decodes to the exact stored strings.
func (a *app) printJSON(v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := a.stdout.Write(jsonSafe(make([]byte, 0, b.Len()+16), b.Bytes()))
	return err
}

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
