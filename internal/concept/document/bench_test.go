package document_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/document"
	"github.com/fsguard/fsguard/internal/testenv"
)

// BenchmarkText100Pages reads the text of a 100-page PDF, 20 pages a call
// as a read does: pages per second, and the process's peak resident
// memory (VmHWM) after, which bounds what a document costs the daemon.
//
//	go test -run '^$' -bench Text100Pages -benchtime 20x ./internal/concept/document
func BenchmarkText100Pages(b *testing.B) {
	data := testenv.PagesPDF(100)
	ctx := context.Background()
	if err := document.Ready(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		for first := 1; first <= 100; first += 20 {
			if _, err := document.Text(ctx, data, first, first+19, 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(100*b.N)/b.Elapsed().Seconds(), "pages/s")
	b.ReportMetric(peakRSS()/(1<<20), "peak-MiB")
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS() float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for l := range strings.Lines(string(b)) {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	return 0
}
