package mcp

import (
	"testing"

	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/service/edit"
	"github.com/fsguard/fsguard/internal/service/read"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestOneAnchorGrammar: the MCP tools' schema and the CLI's flags accept
// exactly the same anchors, because both are edit.AnchorPattern, built on
// lines.RefPattern; read's around takes the same one-line grammar.
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
		"0#a3", "12#a3..0#00", "007#a3", "0..12#a3",
	} {
		schemaOK := rs.Validate(v) == nil
		_, cliErr := edit.Spec{Replace: &v, Text: &text}.Edit()
		if schemaOK != (cliErr == nil) {
			t.Errorf("%q: the MCP schema says %v, the CLI says %v", v, schemaOK, cliErr)
		}
	}
	around, err := (&jsonschema.Schema{Type: "string", Pattern: `^` + lines.RefPattern + `$`}).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"12#a3", "007#a3", "0#a3", "12", "12#a3: x", " 12#a3", "12#a3..14#0f"} {
		schemaOK := around.Validate(v) == nil
		checked := read.Request{Around: v}.Check()
		if schemaOK != (checked == nil) {
			t.Errorf("around %q: the MCP schema says %v, read's check %v", v, schemaOK, checked)
		}
	}
}
