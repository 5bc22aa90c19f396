package admit_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/admit"
)

// tgz packs members (name, content pairs) as tar.gz.
func tgz(t *testing.T, members ...string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for i := 0; i < len(members); i += 2 {
		tw.WriteHeader(&tar.Header{Name: members[i], Mode: 0o644, Size: int64(len(members[i+1])), Typeflag: tar.TypeReg})
		tw.Write([]byte(members[i+1]))
	}
	tw.Close()
	zw.Close()
	return b.String()
}

// TestPackedVerdicts: a packed file is refused for what it holds — a key
// (DENIED), a denied name (DENIED, naming member and rule) — or when it
// cannot be checked (FS_ARCHIVE_UNCHECKED), whether it is read whole by
// its first read or scanned past its sample; [sniff] archives = "deny"
// refuses every packed file, "allow" none, and allow_globs exempts.
func TestPackedVerdicts(t *testing.T) {
	t.Parallel()
	// Past readWhole: the scan of the rest, on its own goroutine.
	noise := make([]byte, 300<<10)
	rand.Read(noise)
	big := string(noise)
	check := func(e *env, rel string, want refusal.Code, words ...string) {
		t.Helper()
		err := e.decide(admit.New(64), rel)
		if refusal.CodeOf(err) != want {
			t.Errorf("%s: %v, want %s", rel, err, want)
			return
		}
		for _, w := range words {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", rel, err, w)
			}
		}
	}
	for _, size := range []string{"small", "large"} {
		pad := ""
		if size == "large" {
			pad = big
		}
		e := newEnv(t, "[sniff]\nallow_globs = [\"fixtures/**\"]\n")
		e.write("env.tgz", tgz(t, "README", "hi\n", "noise.bin", pad, "app/.env", "A=1\n"))
		e.write("key.tgz", tgz(t, "noise.bin", pad, "notes.txt", key))
		e.write("clean.tgz", tgz(t, "noise.bin", pad, "main.go", "package main\n"))
		e.write("deep.tgz", tgz(t, "noise.bin", pad, "a.tgz", tgz(t, "b.tgz", tgz(t, "c.txt", "x"))))
		e.write("fixtures/env.tgz", tgz(t, "noise.bin", pad, ".env", "A=1\n"))
		check(e, "env.tgz", refusal.Denied, `"app/.env"`, `"**/.env"`)
		check(e, "key.tgz", refusal.Denied, `"notes.txt"`, "private key")
		check(e, "deep.tgz", refusal.ArchiveUnchecked, `"a.tgz/b.tgz"`)
		check(e, "clean.tgz", "")
		check(e, "fixtures/env.tgz", "")

		deny := newEnv(t, "[sniff]\narchives = \"deny\"\n")
		deny.write("clean.tgz", tgz(t, "noise.bin", pad, "main.go", "package main\n"))
		check(deny, "clean.tgz", refusal.Denied, `archives = "deny"`)
		allow := newEnv(t, "[sniff]\narchives = \"allow\"\n")
		allow.write("env.tgz", tgz(t, "noise.bin", pad, "app/.env", "A=1\n"))
		check(allow, "env.tgz", "")
	}
}
