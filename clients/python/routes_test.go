package python_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// notInPythonClient are the routes the Python client leaves out on purpose: the dashboard,
// the MCP endpoint, Prometheus metrics, and admin routes that are a browser's or another tool's
// (memctl's). Every other route of openapi.json must be called somewhere in the client.
var notInPythonClient = map[string]string{
	"GET /":                     "dashboard",
	"GET /ui/{file}":            "dashboard",
	"GET /metrics":              "Prometheus",
	"POST /mcp":                 "MCP clients",
	"GET /v1/admin/stats":       "the dashboard's; stats() reads GET /v1/stats",
	"GET /v1/admin/series":      "the dashboard's charts",
	"GET /v1/admin/export":      "memctl export",
	"POST /v1/admin/import":     "memctl import",
	"POST /v1/admin/backup.tar": "a browser download",
}

// adminJob: POST /v1/admin/OPERATION starts a job, called through admin(operation), one
// generic method (the trash purge is not a job and has a method of its own).
var adminJob = regexp.MustCompile(`^POST /v1/admin/[a-z/]+$`)

// TestEveryRouteHasAMethod fails when openapi.json gains a route the hand-written Python client
// does not call (the TypeScript client's types are generated; this one is written by hand).
func TestEveryRouteHasAMethod(t *testing.T) {
	doc, err := os.ReadFile("../../server/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &spec); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("engram/_operations.py")
	if err != nil {
		t.Fatal(err)
	}
	// call("METHOD", "/v1/memories/" + quote(id) + "/history", ...): the method and the rest
	// of the line, whose string literals are the path's static parts.
	calls := regexp.MustCompile(`call\("([A-Z]+)",\s*("[^\n]*)`).FindAllStringSubmatch(string(src), -1)
	param := regexp.MustCompile(`\{[^}]+\}`)
	literal := regexp.MustCompile(`"([^"]*)"`)
	methods := map[string]bool{"get": true, "post": true, "put": true, "patch": true, "delete": true}
	checked := 0
	for path, ops := range spec.Paths {
		for m := range ops {
			if !methods[m] {
				continue // "parameters" and the like
			}
			route := strings.ToUpper(m) + " " + path
			if _, ok := notInPythonClient[route]; ok || adminJob.MatchString(route) && route != "POST /v1/admin/forgotten/purge" {
				continue
			}
			checked++
			// The path with its parameters as the client builds it: static parts in order.
			want := param.ReplaceAllString(path, "\x00")
			found := false
			for _, c := range calls {
				if c[1] != strings.ToUpper(m) {
					continue
				}
				var built strings.Builder
				for i, l := range literal.FindAllStringSubmatch(c[2], -1) {
					if i > 0 {
						built.WriteString("\x00")
					}
					built.WriteString(l[1])
				}
				if strings.HasPrefix(built.String()+"\x00", want) || built.String() == want {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("the Python client has no call for %s (clients/python/engram/_operations.py)", route)
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d routes checked; the walk over openapi.json is broken", checked)
	}
}
