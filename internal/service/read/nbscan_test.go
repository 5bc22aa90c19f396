package read

import (
	"strings"
	"testing"
)

// TestNotebookStreamed: the streaming decoder shows what the whole-tree
// decoder showed — escapes, surrogate pairs, cut outputs and sources — and
// what is not a notebook (trailing bytes, nesting too deep, bad UTF-8) is
// shown as text.
func TestNotebookStreamed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head := `{"nbformat":4,"metadata":{"language_info":{"name":"py"}},"cells":[`
	big := strings.Repeat("0123456789abcdef", 8<<10) // one 128 KiB line
	f.write("esc.ipynb", head+`{"cell_type":"code","source":"a\u00e9\ud83d\ude00\t\"q\"\n","outputs":[{"output_type":"stream","name":"stdout","text":["`+big+`\n","tail\n"]},{}]}]}`)
	res, err := f.read("esc.ipynb", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[cell 1] code\naé😀\t\"q\"\n", "[output 1] stdout\n... (2 more lines of output not shown)\n", "[output 2]  (not shown)\n", "(End of notebook - total 1 cell)"} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("missing %q in:\n%s", want, res.Body)
		}
	}
	// A source larger than the answer's cap is cut, and says so.
	long := strings.Repeat("line of source\\n", 10000)
	f.write("src.ipynb", head+`{"cell_type":"code","source":"`+long+`"},{"cell_type":"markdown","source":"x"}]}`)
	res, err = f.read("src.ipynb", 0, 0)
	if err != nil || !strings.Contains(res.Body, "more lines of source not shown") || len(res.Body) > 2*f.r.Guard.Policy().Limits.MaxBytes {
		t.Fatalf("long source: %v %d bytes\n%.300s", err, len(res.Body), res.Body)
	}
	if res.Notebook.Cells != 2 {
		t.Errorf("cells %d, want 2", res.Notebook.Cells)
	}
	// Many outputs: the cell's budget ends them, the rest counted.
	many := strings.Repeat(`{"output_type":"stream","name":"stdout","text":"x\n"},`, 100000)
	f.write("many.ipynb", head+`{"cell_type":"code","source":"","outputs":[`+many+`{}]}]}`)
	res, err = f.read("many.ipynb", 0, 0)
	if err != nil || !strings.Contains(res.Body, "more outputs not shown") || len(res.Body) > 2*f.r.Guard.Policy().Limits.MaxBytes {
		t.Fatalf("many outputs: %v %d bytes", err, len(res.Body))
	}
	for name, text := range map[string]string{
		"trailing.ipynb": head + `]} x`,
		"deep.ipynb":     `{"nbformat":4,"metadata":` + strings.Repeat(`[`, 100000) + strings.Repeat(`]`, 100000) + `,"cells":[]}`,
		"badutf.ipynb":   head + `{"cell_type":"code","source":"` + "\xff" + `"}]}`,
		"old.ipynb":      `{"nbformat":3,"cells":[]}`,
		"cut.ipynb":      head + `{"cell_type":"code","source":"abc`,
	} {
		f.write(name, text)
		res, err := f.read(name, 0, 0)
		if name == "badutf.ipynb" {
			if err == nil {
				t.Errorf("%s: shown", name)
			}
			continue
		}
		if err != nil || res.Kind() != "file" || !strings.Contains(strings.Join(res.Notes, " "), "shown as text") {
			t.Errorf("%s: %v %+v", name, err, res)
		}
	}
}
