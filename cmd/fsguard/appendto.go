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
func appendTarget(path string) (*os.File, cursor, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, cursor{}, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, cursor{}, err
	}
	// The last complete line is within the last 64 KiB of a well-formed
	// file (a record is far smaller); read back until one is found.
	size := st.Size()
	var last cursor
	for back := int64(64 << 10); ; back *= 4 {
		from := max(0, size-back)
		buf := make([]byte, size-from)
		if _, err := f.ReadAt(buf, from); err != nil && err != io.EOF {
			f.Close()
			return nil, cursor{}, err
		}
		end := bytes.LastIndexByte(buf, '\n')
		if end < 0 && from > 0 {
			continue // no complete line in this much: look further back
		}
		keep := from + int64(end) + 1 // up to the last newline (0: none)
		if keep < size {
			if err := f.Truncate(keep); err != nil { // a torn last line
				f.Close()
				return nil, cursor{}, err
			}
		}
		if end >= 0 {
			start := bytes.LastIndexByte(buf[:end], '\n') + 1
			var r struct {
				Seq     int64
				Journal string
			}
			if err := json.Unmarshal(buf[start:end], &r); err != nil || r.Seq <= 0 {
				f.Close()
				return nil, cursor{}, fmt.Errorf("%s: its last line is not a journal record (%v); append to a file only fsguard writes", path, err)
			}
			last = cursor{seq: r.Seq, journal: r.Journal}
		}
		break
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, cursor{}, err
	}
	return f, last, nil
}

// cursor is where a stream file ends: its last record's sequence number
// and journal. A journal started anew numbers from 1 again, so a file
// whose last record is another journal's resumes at the new one's first.
type cursor struct {
	seq     int64
	journal string // "" in lines written before records named their journal
}

// after is the sequence number to resume after in the journal with id.
func (c cursor) after(id string) int64 {
	if c.journal != "" && c.journal != id {
		return 0
	}
	return c.seq
}
