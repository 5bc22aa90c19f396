package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// appendTarget opens the file a follower appends JSON lines to
// (tail --append-to) and says where to resume: after the seq of its last
// complete line. A line cut short by a kill is cut off, so each record is
// in the file exactly once however often the follower is killed and
// started again — the file is its own cursor, and a shipper that reads
// the file (rsyslog's imfile, Fluent Bit's tail) forwards each once.
func appendTarget(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	// The last complete line is within the last 64 KiB of a well-formed
	// file (a record is far smaller); read back until one is found.
	size := st.Size()
	var seq int64
	for back := int64(64 << 10); ; back *= 4 {
		from := max(0, size-back)
		buf := make([]byte, size-from)
		if _, err := f.ReadAt(buf, from); err != nil && err != io.EOF {
			f.Close()
			return nil, 0, err
		}
		end := bytes.LastIndexByte(buf, '\n')
		if end < 0 && from > 0 {
			continue // no complete line in this much: look further back
		}
		keep := from + int64(end) + 1 // up to the last newline (0: none)
		if keep < size {
			if err := f.Truncate(keep); err != nil { // a torn last line
				f.Close()
				return nil, 0, err
			}
		}
		if end >= 0 {
			start := bytes.LastIndexByte(buf[:end], '\n') + 1
			var r struct{ Seq int64 }
			if err := json.Unmarshal(buf[start:end], &r); err != nil || r.Seq <= 0 {
				f.Close()
				return nil, 0, fmt.Errorf("%s: its last line is not a journal record (%v); append to a file only fsguard writes", path, err)
			}
			seq = r.Seq
		}
		break
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, seq, nil
}
