package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/engramdb/engram/memory"
)

// Besides one line per memory (MemoryJSON), an export carries one line per
// conversation and per task, after the memories:
//
//	{"conversation": {"session": ..., "summary": ..., "compressed": n, "turns": [...]}}
//	{"task": {"id": ..., "goal": ..., "session": ..., "status": ..., "steps": [...], ...}}
//
// A memory line has "id" and "text" at its top level, so the two never look
// alike. `memctl export` and GET /v1/admin/export write the same lines.

// RecordLine is a conversation or task line of an export.
type RecordLine struct {
	Conversation *memory.Conversation `json:"conversation,omitempty"`
	Task         *memory.Task         `json:"task,omitempty"`
}

// ExportRecords writes the conversations and tasks of s (of one session
// when session is not nil) as record lines.
func ExportRecords(ctx context.Context, s *memory.Store, enc *json.Encoder, session *string) (convs, tasks int, err error) {
	err = s.Conversations(ctx, func(c memory.Conversation) error {
		if session != nil && c.Session != *session {
			return nil
		}
		convs++
		return enc.Encode(RecordLine{Conversation: &c})
	})
	if err != nil {
		return convs, 0, err
	}
	ts, err := s.Tasks(ctx)
	if err != nil {
		return convs, 0, err
	}
	for i := range ts {
		if session != nil && ts[i].Session != *session {
			continue
		}
		tasks++
		if err := enc.Encode(RecordLine{Task: &ts[i]}); err != nil {
			return convs, tasks, err
		}
	}
	return convs, tasks, nil
}

// ParseRecordLine recognizes a conversation or task line; ok is false for
// anything else (a memory line).
func ParseRecordLine(line []byte) (rec RecordLine, ok bool, err error) {
	t := bytes.TrimSpace(line)
	if !bytes.HasPrefix(t, []byte(`{"conversation"`)) && !bytes.HasPrefix(t, []byte(`{"task"`)) {
		return rec, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return rec, true, err
	}
	if (rec.Conversation == nil) == (rec.Task == nil) {
		return rec, true, fmt.Errorf("a record line holds exactly one conversation or task")
	}
	return rec, true, nil
}

// ImportRecords writes parsed conversation and task lines.
func ImportRecords(ctx context.Context, s *memory.Store, recs []RecordLine) error {
	for _, r := range recs {
		var err error
		if r.Conversation != nil {
			err = s.ImportConversation(ctx, *r.Conversation)
		} else {
			err = s.ImportTask(ctx, *r.Task)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
