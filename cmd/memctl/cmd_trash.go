package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/memory"
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
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := ops.RestoreForgotten(cmd.Context(), api.RestoreForgottenRequest{IDs: args})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(resp)
			}
			fmt.Fprintf(a.stdout, "restored %d memories\n", resp.Restored)
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
			ops, err := a.dataOps(cmd.Context())
			if err != nil {
				return err
			}
			if purge {
				resp, err := ops.PurgeForgotten(cmd.Context())
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(resp)
				}
				fmt.Fprintf(a.stdout, "purged %d forgotten memories for good\n", resp.Purged)
				return nil
			}
			var req api.ForgottenRequest
			if cmd.Flags().Changed("session") {
				req.Session = &session
			}
			resp, err := ops.Forgotten(cmd.Context(), req)
			if err != nil {
				return err
			}
			out := resp.Memories
			if a.jsonOut {
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
