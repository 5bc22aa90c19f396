// Package credbench measures fsguard's credential detector beside
// gitleaks' (its default rules, used as a library) on the same input: a
// module of its own, so the main one never depends on gitleaks. Run with
// scripts/bench-creds.sh, or:
//
//	cd tools/credbench && go test -run '^$' -bench . -benchtime 3x
//
// The input is Go's own sources (text without credentials, the common
// case), concatenated up to 64 MiB, and CREDBENCH_TREE when set (e.g. a
// moby checkout).
package credbench

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/zricethezav/gitleaks/v8/detect"
)

// corpus is the text files under dir, up to max bytes, as one buffer per
// file (both detectors are handed files, as they would be).
func corpus(b *testing.B, dir string, max int) [][]byte {
	var files [][]byte
	total := 0
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || total >= max {
			return fs.SkipDir
		}
		if e.IsDir() || !e.Type().IsRegular() || strings.Contains(p, "/testdata/") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err == nil && len(data) < 4<<20 && sniff.Classify(data, true).Class == sniff.Text {
			files = append(files, data)
			total += len(data)
		}
		return nil
	})
	if total == 0 {
		b.Skipf("no text under %s", dir)
	}
	return files
}

func inputs(b *testing.B) map[string][][]byte {
	out := map[string][][]byte{}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err == nil {
		out["go-src"] = corpus(b, filepath.Join(strings.TrimSpace(string(goroot)), "src"), 64<<20)
	}
	if tree := os.Getenv("CREDBENCH_TREE"); tree != "" {
		out[filepath.Base(tree)] = corpus(b, tree, 256<<20)
	}
	return out
}

func size(files [][]byte) int64 {
	n := 0
	for _, f := range files {
		n += len(f)
	}
	return int64(n)
}

func BenchmarkFsguard(b *testing.B) {
	p, err := policy.Default(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	d, err := sniff.NewDetector(p.Secrets)
	if err != nil {
		b.Fatal(err)
	}
	each(b, func(f []byte) int { return len(d.Find(f)) })
}

func BenchmarkGitleaks(b *testing.B) {
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		b.Fatal(err)
	}
	each(b, func(f []byte) int { return len(d.DetectBytes(f)) })
}

// each times find over every file of each input, counting what it found.
func each(b *testing.B, find func([]byte) int) {
	for name, files := range inputs(b) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(size(files))
			found := 0
			for b.Loop() {
				for _, f := range files {
					found += find(f)
				}
			}
			b.ReportMetric(float64(found)/float64(b.N), "found/op")
		})
	}
}
