package journal

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The acknowledged mark: the highest sequence number this journal's
// long-lived writer (the daemon, see HoldFiles) has told a caller was
// recorded, kept in a small file beside the journal (AckedFile) and
// synced after every append, before the append returns. A committed
// record lives in the WAL until a checkpoint copies it into the database;
// a WAL deleted or replaced before that takes committed records with it,
// and the database alone then looks whole, its chain intact. The mark
// outlives that: a journal whose head is below its mark lost acknowledged
// records, and Verify and the next HoldFiles say so.
//
// Invariant: the mark never exceeds a sequence number that was committed
// to this journal (it is written after the commit, and names the journal's
// id, so a journal started anew at the same path is not measured by an
// older one's mark). It may lag (a crash between the commit and the mark,
// or another process's appends): a lagging mark hides nothing that was
// acknowledged by this writer before its last mark.

// AckedFile is where the acknowledged mark of the journal at path is kept.
func AckedFile(path string) string { return path + ".acked" }

// KindLoss: records acknowledged to their writers are missing from the
// journal (Count of them, after the record before this one): the WAL that
// held them was deleted or replaced before they reached the database, or
// the journal was restored from an older copy. Appended by the next
// long-lived writer that finds the gap; Verify fails on it, always.
const KindLoss = "loss"

// LostRecords is the code of a KindLoss record.
const LostRecords = "RECORDS_LOST"

// ackedLine is the mark's file: the journal's id and the sequence number,
// fixed width so a rewrite in place covers the old one entirely.
func ackedLine(id string, seq int64) []byte {
	return fmt.Appendf(nil, "%-40s %020d\n", ackID(id), seq)
}

// ackID is the id as the mark names it: a journal older than ids is "-".
func ackID(id string) string {
	if id == "" {
		return "-"
	}
	return id
}

// readAcked returns the mark beside the journal at path, for the journal
// id, and whether there is one.
func readAcked(path, id string) (int64, bool) {
	b, err := os.ReadFile(AckedFile(path))
	if err != nil || len(b) > 256 {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || f[0] != ackID(id) {
		return 0, false
	}
	seq, err := strconv.ParseInt(f[1], 10, 64)
	return seq, err == nil
}

// openAcked opens (making it, 0600, never through a symlink) the mark's
// file for the writer.
func openAcked(path string) (*os.File, error) {
	return os.OpenFile(AckedFile(path), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
}

// ack writes the mark: seq was committed and is about to be acknowledged.
// A failure is returned for the log; the records are committed whatever
// the mark says.
func (j *Journal) ack(seq int64) error {
	h := j.files
	if h == nil || h.acked == nil {
		return nil
	}
	h.ackMu.Lock()
	defer h.ackMu.Unlock()
	if seq <= h.ackedSeq {
		return nil // a later append already marked past it
	}
	if _, err := h.acked.WriteAt(ackedLine(h.id, seq), 0); err != nil {
		return err
	}
	if err := unix.Fdatasync(int(h.acked.Fd())); err != nil {
		return err
	}
	h.ackedSeq = seq
	return nil
}

// LostError says that records acknowledged to their writers are not in
// the journal.
type LostError struct {
	Path        string
	Head, Acked int64
}

func (e *LostError) Error() string {
	return fmt.Sprintf("journal %s: records %d to %d were acknowledged to their writers but are not in the journal (its WAL was deleted or replaced before they reached the database, or the journal was restored from an older copy); the journal cannot show what they said", e.Path, e.Head+1, e.Acked)
}

// lostSince checks the mark against the head: a *LostError when records
// the mark covers are missing.
func (j *Journal) lostSince(head int64) error {
	acked, ok := readAcked(j.path, j.ID())
	if !ok || acked <= head {
		return nil
	}
	return &LostError{Path: j.path, Head: head, Acked: acked}
}

// startMark is HoldFiles' part of the mark: a gap found between the mark
// and the head is recorded in the chain (KindLoss), so it is never
// forgotten once the journal grows past the mark; then the mark is set to
// the head.
func (j *Journal) startMark(h *ownFiles) error {
	f, err := openAcked(j.path)
	if err != nil {
		return fmt.Errorf("journal %s: its acknowledged mark: %w", j.path, err)
	}
	h.acked, h.id = f, j.ID()
	seq, _, err := j.head(j.db)
	if err != nil {
		return j.damage(err)
	}
	var lost *LostError
	if err := j.lostSince(seq); errors.As(err, &lost) {
		h.lostErr = lost
		r := &Record{Kind: KindLoss, Code: LostRecords, Count: lost.Acked - lost.Head, Pid: uint32(os.Getpid()), Detail: lost.Error()}
		if err := j.Append(r); err != nil {
			return err
		}
		seq = r.Seq
	}
	if _, err := f.WriteAt(ackedLine(h.id, seq), 0); err != nil {
		return err
	}
	h.ackedSeq = seq
	return unix.Fdatasync(int(f.Fd()))
}
