package main

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/ollama"
	"github.com/engramdb/engram/server"
)

func (a *app) serviceCommands() []*cobra.Command {
	return []*cobra.Command{a.serveCommand(), a.mcpCommand(), a.chatCommand(), a.migrateCommand(), a.keysCommand()}
}

func (a *app) serveCommand() *cobra.Command {
	var (
		addr        string
		sa          serveAuth
		backupRoot  string
		sampleEvery time.Duration
		allowHosts  []string
		maxBody     int64
		timeout     time.Duration
		mcpIdle     time.Duration
		mcpSessions int
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the store over HTTP (JSON API, admin API, web dashboard at /, /metrics, MCP at /mcp)",
		Long: "serve binds 127.0.0.1:7077 by default, open to the local user. With keys (--keys FILE, managed by\n" +
			"`memctl keys`; by default " + defaultKeysPath() + ", enforced as soon as it exists) or an admin token\n" +
			"(--token-file FILE or ENGRAM_TOKEN) every request needs `Authorization: Bearer KEY`, and a key reaches\n" +
			"only its sessions with its rights. Binding any other address requires keys or a token, and TLS\n" +
			"(--tls-cert/--tls-key, or --tls-self-signed) unless --insecure-http." +
			"\nWhile it runs, the store's LOCK file names its address, and memctl admin commands on the same --dir\n" +
			"(stats, check, compact, cleanup, archive, export, import, backup, reembed) run through its API.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger := slog.New(slog.NewTextHandler(a.stderr, nil))
			opts := server.Options{AllowedHosts: allowHosts, MaxBodyBytes: maxBody, RequestTimeout: timeout, Logger: logger,
				MCPSessionIdle: mcpIdle, MCPMaxSessions: mcpSessions}
			scheme, err := sa.resolve(addr, &opts, logger)
			if err != nil {
				return err
			}
			// A server lives long: its first queries should not pay for
			// verifying and mapping the index (engine.Options.Warm).
			a.engineOpts.Warm = true
			s, err := a.openStore()
			if err != nil {
				return err
			}
			opts.Store = s
			opts.Admin = server.AdminOptions{StoreDir: a.dir, BackupRoot: backupRoot, NewEmbedder: a.newEmbedder, SampleEvery: sampleEvery,
				Reembedded: func(spec string) { a.recordEmbedder(s, spec) }}
			h, err := server.New(opts)
			if err != nil {
				return err
			}
			err = server.ListenAndServe(cmd.Context(), addr, h, 10*time.Second, func(bound net.Addr) {
				url := serveURL(scheme, bound)
				// memctl commands that find the store locked come here.
				if err := s.SetLockNote(lockNotePrefix + url); err != nil && !errors.Is(err, memory.ErrUnsupported) {
					logger.Warn("recording the address in LOCK", "err", err)
				}
				logger.Info("serving", "addr", url, "dashboard", url+"/", "store", a.dir, "auth", sa.mode())
			})
			_ = s.SetLockNote("")
			if err != nil {
				return err
			}
			// Flush so the next open replays no WAL; Close (in run) persists the rest.
			if err := s.Flush(cmd.Context()); err != nil {
				logger.Warn("flush on shutdown", "err", err)
			}
			logger.Info("stopped")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:7077", "listen address")
	sa.addFlags(f)
	f.DurationVar(&sampleEvery, "sample-every", server.DefaultSampleEvery, "how often the dashboard's plots (GET /v1/admin/series) take a point")
	f.StringVar(&backupRoot, "backup-root", "", "directory under which POST /v1/admin/backup (memctl backup --server-side) may write backups")
	f.StringSliceVar(&allowHosts, "allow-host", nil, "extra host names clients may use in Host/Origin (loopback names and the bound address are always allowed)")
	f.Int64Var(&maxBody, "max-body", server.DefaultMaxBodyBytes, "largest request body in bytes")
	f.DurationVar(&timeout, "timeout", server.DefaultRequestTimeout, "per-request timeout (MCP tool calls included)")
	f.DurationVar(&mcpIdle, "mcp-idle", server.DefaultMCPSessionIdle, "close an MCP session after this long without a request")
	f.IntVar(&mcpSessions, "mcp-sessions", server.DefaultMCPMaxSessions, "most MCP sessions held at once (a new one closes the one idle the longest)")
	return cmd
}

// serveURL is the URL clients on this machine reach a listener on: an
// unspecified address (0.0.0.0, ::) is reached through loopback.
func serveURL(scheme string, bound net.Addr) string {
	host, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return scheme + "://" + bound.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

func (a *app) mcpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the store to an agent client over the Model Context Protocol on stdio",
		Long: "mcp serves the memory tools (remember, recall, forget, ...) over stdio. While `memctl serve` holds\n" +
			"the store, the tools run through that server's API with --server-token's key, as the other commands do.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			return server.NewMCPFor(ops, server.LocalCaller).Run(cmd.Context(), &mcp.IOTransport{Reader: nopReadCloser{a.stdin}, Writer: nopWriteCloser{a.exactStdout()}})
		},
	}
}

func (a *app) chatCommand() *cobra.Command {
	var (
		session, model string
		k              int
		extract        bool
	)
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Chat with a local Ollama model that remembers: recall -> prompt -> answer -> remember",
		Long: "chat reads your messages from stdin, one per line. For each it recalls the session's memories,\n" +
			"builds the prompt (memories + conversation summary + recent turns), streams the answer, remembers\n" +
			"the turn and compresses the conversation when it outgrows its budget. Needs `ollama serve`.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := ollama.New(ollama.Config{BaseURL: a.ollamaURL})
			if err != nil {
				return err
			}
			// Through a server, the server's summarizer compresses the conversation.
			ops, err := a.dataOpsWith(cmd.Context(), memory.Options{Summarizer: &ollama.Summarizer{Client: client, Model: model}})
			if err != nil {
				return err
			}
			c := &chat{store: ops, client: client, model: model, session: session, k: k, out: a.stdout}
			if extract {
				c.extractor = &ollama.Extractor{Client: client, Model: model}
			}
			sc := bufio.NewScanner(a.stdin)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			fmt.Fprintf(a.stderr, "chatting as session %q with %s via %s; end with Ctrl-D\n", session, c.modelName(), client.BaseURL())
			for {
				fmt.Fprint(a.stderr, "> ")
				if !sc.Scan() {
					return sc.Err()
				}
				line := strings.TrimSpace(sc.Text())
				if line == "" {
					continue
				}
				if err := c.turn(cmd.Context(), line); err != nil {
					return err
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringVarP(&session, "session", "s", "default", "whose memories to use")
	f.StringVar(&model, "model", ollama.DefaultChatModel, "Ollama chat model")
	f.IntVarP(&k, "k", "k", memory.DefaultK, "memories recalled per message")
	f.BoolVar(&extract, "extract", false, "ask the model which facts to remember instead of storing whole turns")
	return cmd
}
