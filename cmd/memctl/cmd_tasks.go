package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/server"
)

func (a *app) tasksCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "Working memory: durable state of multi-step tasks",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.listTasks(cmd) },
	}
	// Task IDs are per session: --session names the task's session, needed when several
	// sessions have a task of the ID (and the session a new task works for).
	var session string
	cmd.PersistentFlags().StringVar(&session, "session", "", "the task's session (task IDs are per session; needed when several sessions have the ID)")
	sessionOf := func(cmd *cobra.Command) *string {
		if f := cmd.Flag("session"); f != nil && f.Changed {
			return &session
		}
		return nil
	}
	list := &cobra.Command{Use: "list", Short: "List tasks", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.listTasks(cmd) }}
	show := &cobra.Command{Use: "show ID", Short: "Show a task with its steps", Args: exactArgs(1, "show takes a task ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sess := sessionOf(cmd)
			return a.withTask(cmd, func(s *memory.Store) (memory.Task, error) {
				if sess != nil {
					return s.SessionTask(cmd.Context(), *sess, args[0])
				}
				return s.Task(cmd.Context(), args[0])
			}, func(c *client) (memory.Task, error) {
				return c.task(cmd.Context(), http.MethodGet, taskPath(args[0], "", sess), nil)
			})
		}}
	var goal string
	start := &cobra.Command{Use: "start [ID]", Short: "Start a task (a random ID when none is given)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("start takes at most one task ID")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return a.withTask(cmd, func(s *memory.Store) (memory.Task, error) {
				return s.StartSessionTask(cmd.Context(), session, id, goal)
			},
				func(c *client) (memory.Task, error) {
					return c.task(cmd.Context(), http.MethodPost, "/v1/tasks", server.StartTaskRequest{ID: id, Goal: goal, Session: session})
				})
		}}
	start.Flags().StringVar(&goal, "goal", "", "what the task is for")
	var status, result, next string
	step := &cobra.Command{Use: "step TASK STEP", Short: "Record a step's status and result, and the next step",
		Args: exactArgs(2, "step takes a task ID and a step name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st := memory.Step{Name: args[1], Status: memory.StepStatus(status)}
			if result != "" {
				// Compact, as the store keeps it: the step prints as a later show does.
				var b bytes.Buffer
				if json.Compact(&b, []byte(result)) != nil {
					return usagef("--result must be JSON (quote strings: '\"text\"')")
				}
				st.Result = json.RawMessage(b.Bytes())
			}
			sess := sessionOf(cmd)
			return a.withTask(cmd, func(s *memory.Store) (memory.Task, error) {
				if sess != nil {
					return s.UpdateSessionStep(cmd.Context(), *sess, args[0], st, next)
				}
				return s.UpdateStep(cmd.Context(), args[0], st, next)
			}, func(c *client) (memory.Task, error) {
				return c.task(cmd.Context(), http.MethodPost, taskPath(args[0], "/steps", sess),
					server.StepRequest{Name: st.Name, Status: st.Status, Result: st.Result, Next: next})
			})
		}}
	step.Flags().StringVar(&status, "status", string(memory.StepDone), "pending, running, done, failed or skipped")
	step.Flags().StringVar(&result, "result", "", "intermediate result as JSON")
	step.Flags().StringVar(&next, "next", "", "the next step to run")
	var finishStatus string
	finish := &cobra.Command{Use: "finish ID", Short: "Mark a task done (or --status failed)", Args: exactArgs(1, "finish takes a task ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sess := sessionOf(cmd)
			return a.withTask(cmd, func(s *memory.Store) (memory.Task, error) {
				if sess != nil {
					return s.FinishSessionTask(cmd.Context(), *sess, args[0], memory.TaskStatus(finishStatus))
				}
				return s.FinishTask(cmd.Context(), args[0], memory.TaskStatus(finishStatus))
			}, func(c *client) (memory.Task, error) {
				return c.task(cmd.Context(), http.MethodPost, taskPath(args[0], "/finish", sess), map[string]string{"status": finishStatus})
			})
		}}
	finish.Flags().StringVar(&finishStatus, "status", string(memory.TaskDone), "done or failed")
	del := &cobra.Command{Use: "delete ID", Short: "Delete a task", Args: exactArgs(1, "delete takes a task ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, c, err := a.openOrRemote(cmd.Context())
			if err != nil {
				return err
			}
			sess := sessionOf(cmd)
			switch {
			case c != nil:
				err = c.do(cmd.Context(), http.MethodDelete, taskPath(args[0], "", sess), nil, nil)
			case sess != nil:
				err = s.DeleteSessionTask(cmd.Context(), *sess, args[0])
			default:
				err = s.DeleteTask(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]string{"deleted": args[0]})
			}
			fmt.Fprintf(a.stdout, "deleted task %s\n", sanitize(args[0]))
			return nil
		}}
	cmd.AddCommand(list, show, start, step, finish, del)
	return cmd
}

func (a *app) listTasks(cmd *cobra.Command) error {
	s, c, err := a.openOrRemote(cmd.Context())
	if err != nil {
		return err
	}
	var tasks []memory.Task
	if c != nil {
		tasks, err = c.tasks(cmd.Context())
	} else {
		tasks, err = s.Tasks(cmd.Context())
	}
	if err != nil {
		return err
	}
	if a.jsonOut {
		return a.printJSON(tasks)
	}
	if len(tasks) == 0 {
		fmt.Fprintln(a.stdout, "(no tasks)")
		return nil
	}
	// Task IDs are per session: a SESSION column once any task has one.
	sessions := slices.ContainsFunc(tasks, func(t memory.Task) bool { return t.Session != "" })
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if sessions {
		fmt.Fprint(tw, "SESSION\t")
	}
	fmt.Fprintln(tw, "ID\tSTATUS\tSTEPS\tNEXT\tUPDATED\tGOAL")
	for _, t := range tasks {
		if sessions {
			fmt.Fprintf(tw, "%s\t", sanitize(t.Session))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", sanitize(t.ID), t.Status, len(t.Steps), sanitize(t.Next), t.Updated.UTC().Format(timeLayout), oneLine(t.Goal, 50))
	}
	return tw.Flush()
}

// withTask runs local on the store, or remote through the server that holds
// it, and prints the task either answers.
func (a *app) withTask(cmd *cobra.Command, local func(*memory.Store) (memory.Task, error), remote func(*client) (memory.Task, error)) error {
	s, c, err := a.openOrRemote(cmd.Context())
	if err != nil {
		return err
	}
	var t memory.Task
	if c != nil {
		t, err = remote(c)
	} else {
		t, err = local(s)
	}
	if err != nil {
		return err
	}
	if a.jsonOut {
		return a.printJSON(t)
	}
	fmt.Fprintf(a.stdout, "task %s (%s): %s\n", sanitize(t.ID), t.Status, sanitize(t.Goal))
	for _, st := range t.Steps {
		res := ""
		if len(st.Result) > 0 {
			res = " -> " + oneLine(string(st.Result), 60)
		}
		fmt.Fprintf(a.stdout, "  [%s] %s%s\n", st.Status, sanitize(st.Name), res)
	}
	if t.Next != "" {
		fmt.Fprintf(a.stdout, "  next: %s\n", sanitize(t.Next))
	}
	return nil
}
