package memory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// Besides one line per memory, an export carries one line per
// conversation and per task, after the memories:
//
//	{"conversation": {"session": ..., "summary": ..., "compressed": n, "turns": [...]}}
//	{"task": {"id": ..., "goal": ..., "session": ..., "status": ..., "steps": [...], ...}}
//
// A memory line has "id" and "text" at its top level, so the two never look
// alike. `memctl export` and GET /v1/admin/export write the same lines.

// RecordLine is a conversation or task line of an export.
type RecordLine struct {
	Conversation *Conversation `json:"conversation,omitempty"`
	Task         *Task         `json:"task,omitempty"`
}

// ExportRecords writes the conversations and tasks of s (of one session
// when session is not nil) as record lines.
func (s *Store) ExportRecords(ctx context.Context, enc *json.Encoder, session *string) (convs, tasks int, err error) {
	err = s.Conversations(ctx, func(c Conversation) error {
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
func (s *Store) ImportRecords(ctx context.Context, recs []RecordLine) error {
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

// WriteExport writes an export file (docs/format/export.md): the header and
// the memories f matches (Store.Export), then the conversations and
// tasks (of session only, when it is not nil). It returns how many of each
// it wrote. `memctl export` and GET /v1/admin/export write it.
func (s *Store) WriteExport(ctx context.Context, w io.Writer, f *Filter, session *string, vectors bool) (memories, convs, tasks int, err error) {
	memories, err = s.Export(ctx, w, ExportOptions{Filter: f, Vectors: vectors})
	if err != nil {
		return memories, 0, 0, err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	convs, tasks, err = s.ExportRecords(ctx, enc, session)
	return memories, convs, tasks, err
}

// ReadExportFile parses an export file of any version: the memory lines
// (with the header, if any) through ReadExport, the conversation and
// task lines through ParseRecordLine. Everything is checked before it
// returns, so a bad line fails the import before anything is written.
func ReadExportFile(r io.Reader) ([]Memory, []RecordLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxExportLine)
	var mem bytes.Buffer
	var recs []RecordLine
	for line := 1; sc.Scan(); line++ {
		rec, ok, err := ParseRecordLine(sc.Bytes())
		if err != nil {
			return nil, nil, fmt.Errorf("%w: line %d: %v", ErrInvalidInput, line, err)
		}
		if ok {
			recs = append(recs, rec)
			continue
		}
		if len(recs) > 0 && len(bytes.TrimSpace(sc.Bytes())) > 0 {
			return nil, nil, fmt.Errorf("%w: line %d: a memory after the conversation and task lines", ErrInvalidInput, line)
		}
		mem.Write(sc.Bytes())
		mem.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%w: reading the export: %w", ErrInvalidInput, err)
	}
	_, ms, err := ReadExport(&mem)
	if err != nil {
		return nil, nil, err
	}
	return ms, recs, nil
}
