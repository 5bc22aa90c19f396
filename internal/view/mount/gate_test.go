package mount

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestOneGate holds the package to its one gate (gate.go): no other file
// hands the kernel a file's bytes — no store into the page cache
// (WriteCache), no READ reply made of bytes or of a descriptor
// (fuse.ReadResultData, fuse.ReadResultFd), no passthrough
// descriptor (PassthroughFd), no READ handler. A warmer or handler added
// elsewhere that did would skip the gate's admission and masks. And the
// warming engine (internal/view/warm) cannot reach the kernel at all: it
// imports no FUSE package (nor unsafe or reflect, to open the view's
// handles), so its one way in is warm.Target.Push, the gate's push.
func TestOneGate(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	testenv.Must(t, err)
	forbidden := map[string]string{
		"WriteCache":     "stores bytes in the page cache",
		"ReadResultData": "replies to a READ with bytes",
		"ReadResultFd":   "replies to a READ from a descriptor",
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "gate.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		testenv.Must(t, err)
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if why, ok := forbidden[x.Sel.Name]; ok {
					t.Errorf("%s: %s %s outside the gate", fset.Position(x.Pos()), x.Sel.Name, why)
				}
			case *ast.FuncDecl:
				if x.Recv != nil && (x.Name.Name == "PassthroughFd" || x.Name.Name == "Read") {
					t.Errorf("%s: %s defined outside the gate", fset.Position(x.Pos()), x.Name.Name)
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("only %d files checked: not run in the package's directory?", checked)
	}

	engine, err := filepath.Glob("../warm/*.go")
	testenv.Must(t, err)
	checked = 0
	for _, name := range engine {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		testenv.Must(t, err)
		checked++
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if strings.HasPrefix(p, "github.com/hanwen/go-fuse") || p == "unsafe" || p == "reflect" || strings.HasSuffix(p, "/view/mount") {
				t.Errorf("%s: the warming engine imports %s: it may reach the kernel only through warm.Target.Push", fset.Position(imp.Pos()), p)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d files of the warming engine checked", checked)
	}
}
