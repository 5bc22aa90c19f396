package mcp

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK checks a tool's arguments against its input schema before the
// tool runs and answers a failure in its own words ("validating
// \"arguments\": validating root: validating /properties/offset: minimum:
// 0/1 is less than 1.000000"). inputErrors rewrites those answers in
// fsguard's: "INVALID_INPUT: offset: must be at least 1 (1 is the first
// line)", naming the argument as the client sent it and what to send.
func inputErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || !r.IsError || len(r.Content) != 1 {
			return res, err
		}
		if tc, ok := r.Content[0].(*mcp.TextContent); ok {
			if msg, ok := strings.CutPrefix(tc.Text, `validating "arguments": `); ok {
				tc.Text = "INVALID_INPUT: " + inputError(msg)
			}
		}
		return res, err
	}
}

var (
	propertyRe   = regexp.MustCompile(`/properties/([A-Za-z_]+)`)
	minimumRe    = regexp.MustCompile(`minimum: .* is less than ([0-9.e+-]+)`)
	missingRe    = regexp.MustCompile(`missing properties: \["([^"]+)"`)
	unexpectedRe = regexp.MustCompile(`additional properties \["([^"]+)"`)
)

// hints say, per argument, what a good value is.
var hints = map[string]string{
	"path":         "a non-blank file path without NUL bytes",
	"offset":       "a positive integer; 1 is the first line",
	"limit":        "a positive integer",
	"replace":      "an anchor N#hh or a range N#hh..M#hh from a read with anchors: true",
	"insert_after": "an anchor N#hh (0: before line 1) from a read with anchors: true",
	"delete":       "an anchor N#hh or a range N#hh..M#hh from a read with anchors: true",
	"old_string":   "the exact, non-empty text to replace",
	"around":       "an anchor N#hh from a read with anchors: true",
}

// inputError turns the SDK's schema message into "<argument>: <what>".
func inputError(msg string) string {
	field := ""
	if m := propertyRe.FindAllStringSubmatch(msg, -1); m != nil {
		field = m[len(m)-1][1]
	}
	what := ""
	switch {
	case strings.Contains(msg, "missing properties"):
		if m := missingRe.FindStringSubmatch(msg); m != nil {
			field = m[1]
		}
		what = "is required"
	case strings.Contains(msg, "additional properties"):
		if m := unexpectedRe.FindStringSubmatch(msg); m != nil {
			field = m[1]
		}
		return field + ": is not an argument of this tool; see the tool's input schema"
	case strings.Contains(msg, "minimum"):
		what = "is too small"
		if m := minimumRe.FindStringSubmatch(msg); m != nil {
			if f, err := strconv.ParseFloat(m[1], 64); err == nil {
				what = "must be at least " + strconv.FormatFloat(f, 'f', -1, 64)
			}
		}
	case strings.Contains(msg, "minLength"):
		what = "must not be empty"
	case strings.Contains(msg, "pattern"):
		what = "is not in the expected form"
	case strings.Contains(msg, "type"):
		what = "has the wrong type"
	default:
		what = "is not valid (" + msg + ")"
	}
	if field == "" {
		field = "arguments"
	}
	if h := hints[field]; h != "" {
		what += " (" + h + ")"
	}
	return field + ": " + what
}
