package sniff

import (
	"strings"
	"testing"
)

// TestWindowMarkersThatReachFar: a window read from the middle of a file
// whose markers look further back than the window's margin (a JWK's
// "kty", 8 KiB) or further ahead (hex) is checked without reading
// outside it, and a JWK it holds whole is still found.
func TestWindowMarkersThatReachFar(t *testing.T) {
	t.Parallel()
	jwk := `{"kty": "EC", "crv": "P-256", "x": "` + strings.Repeat("x", 43) + `", "y": "` + strings.Repeat("y", 43) + `", "d": "` + strings.Repeat("d", 43) + `"}`
	back, _ := Margins(1)
	for _, pad := range []int{0, 1, 100, 300, 4000, int(back) - 10, int(back), int(back) + 50} {
		win := []byte(strings.Repeat(" ", pad) + jwk + strings.Repeat(" ", 20000) + "2d2d2d2d2d2d 020100 kty")
		for _, base := range []int64{0, 1 << 20} {
			got := KeyInWindow(win, base, true)
			if base == 0 && !got {
				t.Errorf("pad %d, base 0: the JWK not found", pad)
			}
		}
	}
}
