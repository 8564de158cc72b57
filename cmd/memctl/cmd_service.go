package main

import (
	"bufio"
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
	return []*cobra.Command{a.serveCommand(), a.mcpCommand(), a.chatCommand(), a.migrateCommand()}
}

func (a *app) serveCommand() *cobra.Command {
	var (
		addr, token string
		allowHosts  []string
		maxBody     int64
		timeout     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the store over HTTP (JSON API, /metrics, /openapi.json, MCP at /mcp)",
		Long: "serve binds 127.0.0.1:7077 by default. Binding any other address requires a bearer token\n" +
			"(--token or ENGRAM_TOKEN) that clients send as `Authorization: Bearer TOKEN`.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !server.IsLoopback(addr) && token == "" {
				return usagef("refusing to serve on %s without an auth token: set --token or ENGRAM_TOKEN (or bind 127.0.0.1)", addr)
			}
			s, err := a.openStore()
			if err != nil {
				return err
			}
			logger := slog.New(slog.NewTextHandler(a.stderr, nil))
			h, err := server.New(server.Options{Store: s, Token: token, AllowedHosts: allowHosts, MaxBodyBytes: maxBody, RequestTimeout: timeout, Logger: logger})
			if err != nil {
				return err
			}
			err = server.ListenAndServe(cmd.Context(), addr, h, 10*time.Second, func(bound net.Addr) {
				logger.Info("serving", "addr", "http://"+bound.String(), "store", a.dir, "auth", token != "")
			})
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
	f.StringVar(&token, "token", "", "bearer token (required off loopback)")
	f.StringSliceVar(&allowHosts, "allow-host", nil, "extra host names clients may use in Host/Origin (loopback names and the bound address are always allowed)")
	f.Int64Var(&maxBody, "max-body", server.DefaultMaxBodyBytes, "largest request body in bytes")
	f.DurationVar(&timeout, "timeout", server.DefaultRequestTimeout, "per-request timeout")
	return cmd
}

func (a *app) mcpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the store to an agent client over the Model Context Protocol on stdio",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.openStore()
			if err != nil {
				return err
			}
			return server.NewMCP(s).Run(cmd.Context(), &mcp.IOTransport{Reader: nopReadCloser{a.stdin}, Writer: nopWriteCloser{a.stdout}})
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
			s, err := a.openStoreWith(memory.Options{Summarizer: &ollama.Summarizer{Client: client, Model: model}})
			if err != nil {
				return err
			}
			c := &chat{store: s, client: client, model: model, session: session, k: k, out: a.stdout}
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
