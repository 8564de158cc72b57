package server

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/memory"
)

// TestOpenAPIRequestFieldsAccepted sends, for every operation openapi.json
// documents with a JSON request body, each documented property on its own
// and fails when the server refuses it as unknown: a field the document names
// but the handler does not take (older_than_days where the server reads
// older_than) is drift that generated clients would turn into 400s.
func TestOpenAPIRequestFieldsAccepted(t *testing.T) {
	s := newTestServer(t, Options{})
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Ref        string                     `json:"$ref"`
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	resolve := func(raw json.RawMessage) schema {
		var sc schema
		json.Unmarshal(raw, &sc)
		for sc.Ref != "" {
			name := strings.TrimPrefix(sc.Ref, "#/components/schemas/")
			sc = schema{}
			json.Unmarshal(doc.Components.Schemas[name], &sc)
		}
		return sc
	}
	// sample is a value of the property's type; a valid value is not
	// needed, only one the decoder gets past the field name with.
	sample := func(raw json.RawMessage) any {
		sc := resolve(raw)
		typ, _ := sc.Type.(string)
		if list, ok := sc.Type.([]any); ok && len(list) > 0 {
			typ, _ = list[0].(string)
		}
		switch typ {
		case "string":
			return "x"
		case "number", "integer":
			return 1
		case "boolean":
			return false
		case "array":
			return []any{}
		default:
			return map[string]any{}
		}
	}
	checked := 0
	paths := make([]string, 0, len(doc.Paths))
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		for method, raw := range doc.Paths[path] {
			var op struct {
				RequestBody struct {
					Content map[string]struct {
						Schema json.RawMessage `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
			}
			json.Unmarshal(raw, &op)
			body, ok := op.RequestBody.Content["application/json"]
			if !ok {
				continue
			}
			url := strings.NewReplacer("{id}", "0123456789abcdef0123456789abcdef", "{session}", "alice", "{name}", "x").Replace(path)
			for prop, propRaw := range resolve(body.Schema).Properties {
				data, _ := json.Marshal(map[string]any{prop: sample(propRaw)})
				req, _ := http.NewRequest(strings.ToUpper(method), s.url+url, strings.NewReader(string(data)))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				msg, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if strings.Contains(string(msg), "unknown field") {
					t.Errorf("%s %s documents %q, the server refuses it: %d %s", strings.ToUpper(method), path, prop, resp.StatusCode, msg)
				}
				checked++
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d documented request fields checked; the walk over openapi.json is broken", checked)
	}
}

// TestOpenAPISchemasDocumentEveryField is the other direction: every JSON
// field of the request types the handlers decode is a property of the
// schema of the same name, so a client generated from openapi.json can send
// it.
func TestOpenAPISchemasDocumentEveryField(t *testing.T) {
	schemas := openAPISchemas(t)
	for name, v := range map[string]any{
		"CleanupRequest":  api.CleanupRequest{},
		"ExportRequest":   api.ExportRequest{},
		"RememberRequest": api.RememberRequest{},
		"RecallRequest":   api.RecallRequest{},
		"ForgetRequest":   api.ForgetRequest{},
		"UpdateRequest":   api.UpdateRequest{},
	} {
		sc, ok := schemas[name]
		if !ok {
			t.Errorf("openapi.json has no schema %s", name)
			continue
		}
		for _, field := range jsonFields(reflect.TypeOf(v)) {
			if _, ok := sc.Properties[field]; !ok {
				t.Errorf("schema %s lacks %q, which the server takes", name, field)
			}
		}
	}
}

// openAPISchema is what these tests read of a component schema.
type openAPISchema struct {
	Required   []string                   `json:"required"`
	Properties map[string]json.RawMessage `json:"properties"`
}

// openAPISchemas returns openapi.json's component schemas by name.
func openAPISchemas(t *testing.T) map[string]openAPISchema {
	t.Helper()
	var doc struct {
		Components struct {
			Schemas map[string]openAPISchema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Components.Schemas
}

// jsonFields lists the JSON names of t's fields, embedded structs flattened.
func jsonFields(t reflect.Type) []string {
	return walkJSONFields(t, func(reflect.StructField, string) bool { return true })
}

// walkJSONFields lists the JSON names of t's fields that keep accepts
// (given the field and its tag's options), embedded structs flattened (a
// pointer to one only when keep accepts it).
func walkJSONFields(t reflect.Type, keep func(f reflect.StructField, opts string) bool) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Anonymous && name == "":
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				if !keep(f, opts) {
					continue
				}
				ft = ft.Elem()
			}
			out = append(out, walkJSONFields(ft, keep)...)
		case !keep(f, opts):
		case name == "":
			out = append(out, f.Name)
		default:
			out = append(out, name)
		}
	}
	return out
}

// TestOpenAPIResponsesRequireWhatIsAlwaysSent: a response schema lists as required exactly
// the fields its Go type always writes (no omitempty or omitzero, and not a pointer, slice,
// map or interface, which can be null), so that a generated client types them as present.
func TestOpenAPIResponsesRequireWhatIsAlwaysSent(t *testing.T) {
	schemas := openAPISchemas(t)
	for name, v := range map[string]any{
		"Job":              Job{},
		"RememberResponse": api.RememberResponse{},
		"RecallResponse":   api.RecallResponse{},
		"ForgetResponse":   api.ForgetResponse{},
		"ListResponse":     api.ListResponse{},
		"HistoryResponse":  api.HistoryResponse{},
		"Score":            memory.Score{},
		"Version":          memory.VersionJSON{},
	} {
		sc := schemas[name]
		want := alwaysSent(reflect.TypeOf(v))
		got := slices.Clone(sc.Required)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("schema %s requires %q, its type always sends %q", name, got, want)
		}
		for _, f := range got {
			if _, ok := sc.Properties[f]; !ok {
				t.Errorf("schema %s requires %q, which it does not describe", name, f)
			}
		}
	}
}

// alwaysSent lists the JSON names of t's fields that encoding/json always writes with a
// non-null value: no omitempty or omitzero, and not a pointer, slice, map or interface.
func alwaysSent(t reflect.Type) []string {
	return walkJSONFields(t, func(f reflect.StructField, opts string) bool {
		if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			return false
		}
		switch f.Type.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			return false
		}
		return true
	})
}
