package roots

import (
	"reflect"
	"testing"
)

// TestParseConfigHooksPath: core.hooksPath and the include paths are read
// as git reads them, whatever the case of the names, the quoting, the
// comments and the continued lines.
func TestParseConfigHooksPath(t *testing.T) {
	t.Parallel()
	cfg := "# c\n[Core]\n\tHooksPath = \"a b\" # c\n[core \"x\"]\nhookspath=x\\\n/y ; c\n" +
		"[include]\n  path = ~/inc.cfg\n[includeIf \"gitdir:~/w/\"]\n\tpath = rel.cfg\n[core.sub] hooksPath = \"q\\\"r\"\n[remote \"o\"]\n\turl = u\n\tbare\n"
	var got []configValue
	for _, kv := range parseConfig([]byte(cfg)) {
		if kv.key == "hookspath" || kv.key == "path" {
			got = append(got, kv)
		}
	}
	want := []configValue{
		{"core", "hookspath", "a b"},
		{"core", "hookspath", "x/y"},
		{"include", "path", "~/inc.cfg"},
		{"includeif", "path", "rel.cfg"},
		{"core", "hookspath", `q"r`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %q\n got %q\nwant %q", cfg, got, want)
	}
}
