package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The documentation is README.md and one page per concept in docs/. These
// tests hold it to the code and to itself: every link lands on a file of
// the repository (and a heading there), nothing points outside it, and the
// pages that list a vocabulary — policy keys, refusal codes, metrics — name
// all of it.

// repo is the repository's top, from tests/.
const repo = ".."

func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	return append([]string{filepath.Join(repo, "README.md")}, pages...)
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	fence   = regexp.MustCompile("(?s)```.*?```")
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#+\s+(.+)$`)
	notSlug = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// slug is a heading's anchor as GitHub makes it.
func slug(h string) string {
	return strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")
}

// TestDocsLinksStayInTheRepository: every relative link in the README and
// docs/ names a file of the repository, and an anchor names a heading of
// its page; no page points at a file outside the repository.
func TestDocsLinksStayInTheRepository(t *testing.T) {
	t.Parallel()
	top, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string][]string{}
	for _, page := range docPages(t) {
		abs, _ := filepath.Abs(page)
		for _, m := range heading.FindAllStringSubmatch(readText(t, page), -1) {
			anchors[abs] = append(anchors[abs], slug(m[1]))
		}
	}
	for _, page := range docPages(t) {
		text := readText(t, page)
		if strings.Contains(text, "../shared") || strings.Contains(text, "shared/DESIGN") {
			t.Errorf("%s points at ../shared, outside the repository", page)
		}
		for _, m := range mdLink.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(link, "#")
			target, _ := filepath.Abs(page)
			if file != "" {
				target = filepath.Join(filepath.Dir(target), file)
			}
			if rel, err := filepath.Rel(top, target); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s: link %q leaves the repository", page, link)
				continue
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %q names no file: %v", page, link, err)
				continue
			}
			if frag != "" && strings.HasSuffix(target, ".md") && !slices.Contains(anchors[target], frag) {
				t.Errorf("%s: link %q names no heading of %s", page, link, filepath.Base(target))
			}
		}
	}
}

// TestReadmeOpensWithTheTwoCommands: the README's first block is the two
// commands that need no set-up.
func TestReadmeOpensWithTheTwoCommands(t *testing.T) {
	t.Parallel()
	first := fence.FindString(readText(t, filepath.Join(repo, "README.md")))
	lines := strings.Split(strings.TrimSpace(first), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "go run ./cmd/fsguard read README.md ") ||
		!strings.HasPrefix(lines[2], "go test ./... ") {
		t.Errorf("README.md does not open with `go run ./cmd/fsguard read README.md` and `go test ./...`:\n%s", first)
	}
}

// TestDocsNameEveryKeyCodeAndMetric: docs/policy.md names every section and
// key policy.toml.example shows, docs/interfaces.md every refusal code, and
// docs/operations.md every metric the daemon serves.
func TestDocsNameEveryKeyCodeAndMetric(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		page, source string
		find         *regexp.Regexp
		quote        bool
	}{
		{"docs/policy.md", "policy.toml.example", regexp.MustCompile(`(?m)^#? ?(\[\[?[a-z.]+\]\]?)\s*$`), true},
		{"docs/policy.md", "policy.toml.example", regexp.MustCompile(`(?m)^#? ?([a-z_]+) = `), true},
		{"docs/interfaces.md", "internal/concept/refusal/refusal.go", regexp.MustCompile(`Code = "([A-Z_]+)"`), false},
		{"docs/operations.md", "internal/concept/metrics/metrics.go", regexp.MustCompile(`\b(fsguard_[a-z_]+)`), false},
	} {
		page := readText(t, filepath.Join(repo, c.page))
		names := c.find.FindAllStringSubmatch(readText(t, filepath.Join(repo, c.source)), -1)
		if len(names) == 0 {
			t.Fatalf("nothing found in %s: the pattern is stale", c.source)
		}
		for _, m := range names {
			name := m[1]
			if c.quote {
				name = "`" + name + "`"
			}
			if !strings.Contains(page, name) {
				t.Errorf("%s does not name %s (from %s)", c.page, name, c.source)
			}
		}
	}
}
