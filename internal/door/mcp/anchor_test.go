package mcp

import (
	"github.com/fsguard/fsguard/internal/service/edit"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestOneAnchorGrammar: the MCP tools' schema and the CLI's flags accept
// exactly the same anchors, because both are edit.AnchorPattern.
func TestOneAnchorGrammar(t *testing.T) {
	t.Parallel()
	rs, err := (&jsonschema.Schema{Type: "string", Pattern: edit.AnchorPattern}).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	text := "x"
	for _, v := range []string{
		"12#a3", "12#a3: a copied line", "12#a3..14#0f", "12#a3..14#0f: y", "0", "1#00:",
		"12#A3", "12", "#a3", "12#a3..", "a#b", " 12#a3", "12#a3 ", "12#a3x", "12#a3...14#0f", "",
	} {
		schemaOK := rs.Validate(v) == nil
		_, cliErr := edit.Spec{Replace: &v, Text: &text}.Edit()
		if schemaOK != (cliErr == nil) {
			t.Errorf("%q: the MCP schema says %v, the CLI says %v", v, schemaOK, cliErr)
		}
	}
}
