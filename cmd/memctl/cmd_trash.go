package main

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/server"
)

// retention reads --forget-retention: an age (30d, 72h), or 0 for "forgetting is final".
func (a *app) retention() (time.Duration, error) {
	switch a.forgetRetention {
	case "":
		return memory.DefaultForgetRetention, nil
	case "0", "0s", "0d":
		return -1, nil // final (memory.Options' 0 would mean the library default, also final)
	}
	d, err := memory.ParseAge(a.forgetRetention)
	if err != nil {
		return 0, usagef("--forget-retention: %v", err)
	}
	return d, nil
}

func (a *app) restoreCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "restore ID...",
		Short: "Bring forgotten memories back under their IDs, with text, metadata, vectors and history (all must be in the trash)",
		Long: "Bring forgotten memories back under their IDs, with text, metadata, vectors and history. It is all or nothing:\n" +
			"an ID not in the trash (see `memctl forgotten`) fails the command, naming it, and restores nothing. Memories moved\n" +
			"by cleanup come back with `memctl archive restore`.",
		Example: `  memctl forget 3f9c...
  memctl restore 3f9c...`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("restore needs the IDs of forgotten memories (memctl forgotten lists them)")
			}
			s, c, err := a.openOrRemote(cmd.Context())
			if err != nil {
				return err
			}
			var n int
			if c != nil {
				var resp map[string]int
				if err := c.do(cmd.Context(), http.MethodPost, "/v1/restore", server.RestoreForgottenRequest{IDs: args}, &resp); err != nil {
					return err
				}
				n = resp["restored"]
			} else if n, err = s.Unforget(cmd.Context(), args...); err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]int{"restored": n})
			}
			fmt.Fprintf(a.stdout, "restored %d memories\n", n)
			return nil
		},
	}
}

func (a *app) forgottenCommand() *cobra.Command {
	var session string
	var purge bool
	cmd := &cobra.Command{
		Use:   "forgotten",
		Short: "List forgotten memories (the trash), restorable with `memctl restore ID`; --purge empties it for good",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, c, err := a.openOrRemote(cmd.Context())
			if err != nil {
				return err
			}
			if purge {
				var n int
				if c != nil {
					var resp map[string]int
					if err := c.do(cmd.Context(), http.MethodPost, "/v1/admin/forgotten/purge", nil, &resp); err != nil {
						return err
					}
					n = resp["purged"]
				} else if n, err = s.PurgeForgotten(cmd.Context()); err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(map[string]int{"purged": n})
				}
				fmt.Fprintf(a.stdout, "purged %d forgotten memories for good\n", n)
				return nil
			}
			var out []server.ForgottenJSON
			if c != nil {
				path := "/v1/forgotten"
				if cmd.Flags().Changed("session") {
					path += "?session=" + url.QueryEscape(session)
				}
				var resp struct {
					Memories []server.ForgottenJSON `json:"memories"`
				}
				if err := c.do(cmd.Context(), http.MethodGet, path, nil, &resp); err != nil {
					return err
				}
				out = resp.Memories
			} else {
				fs, err := s.Forgotten(cmd.Context())
				if err != nil {
					return err
				}
				for _, f := range fs {
					if cmd.Flags().Changed("session") && f.Session != session {
						continue
					}
					out = append(out, server.ForgottenJSON{MemoryJSON: memory.ToJSON(&f.Memory, false), Forgotten: f.Forgotten, PurgeAfter: f.PurgeAfter})
				}
			}
			if a.jsonOut {
				if out == nil {
					out = []server.ForgottenJSON{}
				}
				return a.printJSON(out)
			}
			if len(out) == 0 {
				fmt.Fprintln(a.stdout, "(nothing forgotten)")
			}
			for _, m := range out {
				fmt.Fprintf(a.stdout, "%s  %s  forgotten %s, purged after %s  %s\n", m.ID, sanitize(m.Session),
					m.Forgotten.Format("2006-01-02 15:04"), m.PurgeAfter.Format("2006-01-02"), oneLine(m.Text, 60))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&session, "session", "s", "", "only this session's")
	cmd.Flags().BoolVar(&purge, "purge", false, "empty the trash: delete every forgotten memory for good")
	return cmd
}
