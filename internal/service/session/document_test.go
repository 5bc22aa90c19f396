package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/document"
	"github.com/fsguard/fsguard/internal/service/read"
	"github.com/fsguard/fsguard/internal/testenv"
)

// A PDF read is an observation of the file's version, its range the pages
// shown; an unchanged re-read of the same pages is answered with the
// notice, other pages are sent, and a changed file is read afresh.
func TestPDFReadIsObservedAndReReadIsANotice(t *testing.T) {
	t.Parallel()
	document.Configure(testenv.DocumentCache())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute) // the one compilation
	defer cancel()
	if err := document.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	path := filepath.Join(e.root, "spec.pdf")
	if err := os.WriteFile(path, testenv.PagesPDF(30), 0o644); err != nil {
		t.Fatal(err)
	}
	readPages := func(pages string) *ReadResult {
		t.Helper()
		r, err := e.svc.Read(ReadRequest{Request: read.Request{Path: "spec.pdf", Cwd: e.root, Pages: pages}, Session: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := readPages("3-5")
	if first.Notice != "" || !strings.Contains(first.Text(), "--- page 3 ---") {
		t.Fatalf("first read: notice %q\n%s", first.Notice, first.Text())
	}
	again := readPages("3-5")
	if !strings.Contains(again.Notice, "you already hold pages 3-5") || strings.Contains(again.Text(), "Page 3 of 30") {
		t.Fatalf("re-read: notice %q\n%s", again.Notice, again.Text())
	}
	other := readPages("6-7")
	if other.Notice != "" || !strings.Contains(other.Text(), "Page 6 of 30") {
		t.Fatalf("other pages: notice %q", other.Notice)
	}
	if err := os.WriteFile(path, testenv.PagesPDF(31), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := readPages("3-5")
	if changed.Notice != "" || !strings.Contains(changed.Text(), "Page 3 of 31") {
		t.Fatalf("changed file: notice %q\n%s", changed.Notice, changed.Text())
	}
}
