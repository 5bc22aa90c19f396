package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTool adds a tool whose arguments fsguard checks itself against the
// tool's input schema, before they are decoded into In and the tool runs:
// a bad one is answered "INVALID_INPUT: <argument>: <what to send>", naming
// the argument as the client sent it, in fsguard's words rather than a
// schema validator's.
func addTool[In any](s *mcp.Server, t *mcp.Tool, run func(In) *mcp.CallToolResult) {
	schema := t.InputSchema.(*jsonschema.Schema)
	s.AddTool(t, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw := req.Params.Arguments
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			raw = json.RawMessage("{}")
		}
		var in In
		if msg := checkArgs(schema, raw); msg != "" {
			return invalid(msg), nil
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return invalid("arguments: has the wrong type"), nil
		}
		return run(in), nil
	})
}

func invalid(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "INVALID_INPUT: " + msg}}}
}

// hints say, per argument, what a good value is.
var hints = map[string]string{
	"path":         "a non-blank file path without NUL bytes",
	"offset":       "a positive integer; 1 is the first line",
	"limit":        "a positive integer",
	"around":       "an anchor N#hh from a read with anchors: true",
	"replace":      "an anchor N#hh or a range N#hh..M#hh from a read with anchors: true",
	"insert_after": "an anchor N#hh (0: before line 1) from a read with anchors: true",
	"delete":       "an anchor N#hh or a range N#hh..M#hh from a read with anchors: true",
	"old_string":   "the exact, non-empty text to replace",
}

// checkArgs checks a call's arguments against its tool's input schema:
// "" when they conform, else "<argument>: <what>".
func checkArgs(schema *jsonschema.Schema, raw json.RawMessage) string {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return "arguments: has the wrong type (a JSON object)"
	}
	field, what := checkValue("arguments", schema, v)
	if what == "" {
		return ""
	}
	if h := hints[field]; h != "" && what != notAnArgument {
		what += " (" + h + ")"
	}
	return field + ": " + what
}

const notAnArgument = "is not an argument of this tool; see the tool's input schema"

// checkValue checks v, the value of field, against s: the field at fault
// (a property inside v, or field itself) and what is wrong, or "".
func checkValue(field string, s *jsonschema.Schema, v any) (string, string) {
	switch s.Type {
	case "object":
		return checkObject(field, s, v)
	case "array":
		return checkArray(field, s, v)
	}
	return field, checkScalar(s, v)
}

func checkObject(field string, s *jsonschema.Schema, v any) (string, string) {
	m, ok := v.(map[string]any)
	if !ok {
		return field, "has the wrong type"
	}
	names := slices.Sorted(maps.Keys(m))
	for _, k := range names {
		if _, known := s.Properties[k]; !known {
			return k, notAnArgument
		}
	}
	for _, k := range s.Required {
		if _, given := m[k]; !given {
			return k, "is required"
		}
	}
	for _, k := range names {
		if f, what := checkValue(k, s.Properties[k], m[k]); what != "" {
			return f, what
		}
	}
	return field, ""
}

func checkArray(field string, s *jsonschema.Schema, v any) (string, string) {
	a, ok := v.([]any)
	switch {
	case !ok:
		return field, "has the wrong type"
	case s.MinItems != nil && len(a) < *s.MinItems:
		return field, "must have at least " + strconv.Itoa(*s.MinItems) + " items"
	case s.MaxItems != nil && len(a) > *s.MaxItems:
		return field, "must have at most " + strconv.Itoa(*s.MaxItems) + " items"
	}
	for _, item := range a {
		if f, what := checkValue(field, s.Items, item); what != "" {
			return f, what
		}
	}
	return field, ""
}

// checkScalar checks an integer, a string or a boolean: what is wrong, or "".
func checkScalar(s *jsonschema.Schema, v any) string {
	wrong := "has the wrong type"
	switch s.Type {
	case "integer":
		n, ok := v.(json.Number)
		f, err := n.Float64()
		switch {
		case !ok || err != nil || f != float64(int64(f)):
			return wrong
		case s.Minimum != nil && f < *s.Minimum:
			return "must be at least " + strconv.FormatFloat(*s.Minimum, 'f', -1, 64)
		}
	case "string":
		str, ok := v.(string)
		switch {
		case !ok:
			return wrong
		case s.MinLength != nil && utf8.RuneCountInString(str) < *s.MinLength:
			return "must not be empty"
		case s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(str):
			return "is not in the expected form"
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return wrong
		}
	}
	return ""
}
