package read

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"github.com/fsguard/fsguard/internal/concept/fileid"
	"image"
	_ "image/gif" // register decoders for DecodeConfig
	_ "image/jpeg"
	_ "image/png"
	"io"

	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
)

// Image describes an image file: its type, pixel size and byte size, and
// its bytes when they fit in max_media_bytes.
type Image struct {
	MIME   string `json:"mime"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Bytes  int64  `json:"bytes"`
	Data   []byte `json:"base64,omitempty"` // base64 in JSON
}

// readImage reads an image's header, and its bytes when small enough.
func readImage(f *roots.File, mime string, maxMedia int64) (*Image, string, error) {
	img := &Image{MIME: mime, Bytes: f.Stat.Size}
	head := make([]byte, 64<<10)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return nil, "", refusal.Of(refusal.IOFailedRaw, refusal.OpRead, f.Shown, refusal.Facts{Detail: err.Error()})
	}
	head = head[:n]
	if mime == "image/webp" {
		img.Width, img.Height = webpSize(head)
	} else if cfg, _, err := image.DecodeConfig(bytes.NewReader(head)); err == nil {
		img.Width, img.Height = cfg.Width, cfg.Height
	}
	h := sha256.New()
	var buf bytes.Buffer
	w := io.Writer(h)
	if f.Stat.Size <= maxMedia {
		w = io.MultiWriter(h, &buf)
	}
	if _, err := io.Copy(w, io.NewSectionReader(f, 0, f.Stat.Size)); err != nil {
		return nil, "", refusal.Of(refusal.IOFailedRaw, refusal.OpRead, f.Shown, refusal.Facts{Detail: err.Error()})
	}
	if f.Stat.Size <= maxMedia {
		img.Data = buf.Bytes()
	}
	return img, fileid.ContentID([sha256.Size]byte(h.Sum(nil))), nil
}

// webpSize reads the canvas size from a WebP header (VP8, VP8L or VP8X).
func webpSize(b []byte) (int, int) {
	if len(b) < 30 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return 0, 0
	}
	switch string(b[12:16]) {
	case "VP8 ":
		return int(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff), int(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff)
	case "VP8L":
		v := binary.LittleEndian.Uint32(b[21:25])
		return int(v&0x3fff) + 1, int((v>>14)&0x3fff) + 1
	case "VP8X":
		w := int(b[24]) | int(b[25])<<8 | int(b[26])<<16
		h := int(b[27]) | int(b[28])<<8 | int(b[29])<<16
		return w + 1, h + 1
	}
	return 0, 0
}

// imageBody is the <content> of an image read.
func imageBody(img *Image) string {
	how := "Use --format json (or the MCP read tool) to receive it as base64."
	if img.Data == nil {
		how = "It is larger than max_media_bytes, so it is not returned inline."
	}
	size := fmt.Sprintf("%dx%d pixels", img.Width, img.Height)
	if img.Width <= 0 || img.Height <= 0 {
		size = "dimensions unreadable (the header is cut short or damaged)"
	}
	return fmt.Sprintf("(Image: %s, %s, %d bytes. %s)\n", img.MIME, size, img.Bytes, how)
}
