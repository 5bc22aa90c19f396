// Package journal owns fsguard's durable record of what an agent was shown
// and what was refused: an SQLite database (WAL, synchronous=FULL, BEGIN
// IMMEDIATE, so any number of processes append safely and a committed
// record survives kill -9) whose records form a hash chain, so deleting or
// altering a committed record is detectable. On top of it: write
// preconditions (check.go) and the per-session delivery ledger (ledger.go).
package journal

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fsguard/fsguard/internal/concept/fileid"

	"github.com/fsguard/fsguard/internal/store/sqlitedb"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SchemaVersion is the journal format this build writes. An older journal
// is migrated on open; a newer one is refused, never half-read.
const SchemaVersion = 3

// Genesis is the prev_hash of the first record.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// Kinds of record.
const (
	KindObservation = "observation"
	KindDenial      = "denial"
	// KindEviction: the held-content store dropped a version's content
	// (blobs), so a session holding it gets lines, not a diff, next time.
	KindEviction = "eviction"
	// KindIntent: a write or edit is about to replace RealPath with the
	// content ContentID. Appended before the rename: if it cannot be
	// recorded, nothing is written. Its outcome is the write's observation
	// (or a KindOutcome saying it did not happen), naming it in Intent.
	KindIntent = "intent"
	// KindOutcome: an intent's write did not happen (Code says why).
	KindOutcome = "outcome"
	// KindHistory: a repository's git history holds what the view hides
	// (Path is the working tree; Detail names the paths and commits).
	KindHistory = "history"
	// KindAccess: a process opened a file through the mount (Opens
	// times in a short interval), or, with Code ACCESS_LOST, opens that
	// could not be recorded one by one. It says that a process opened the
	// file, not that a model saw its bytes: it is never an observation.
	KindAccess = "access"
	// KindListing: a session was shown a directory's entries (Start-End of
	// TotalLines, ViewID the listing's hash). It observes no file: no
	// write precondition counts it.
	KindListing = "listing"
	// KindMask: a version of RealPath holds credentials that every door
	// shows masked. Detail lists each as "family line:column len=N
	// value=H", H a keyed hash of its value (see MaskKey), never the value.
	KindMask = "mask"
)

// Origins of an observation.
const (
	OriginRead   = "read"   // the agent was shown lines
	OriginWrite  = "write"  // the agent wrote this version
	OriginLedger = "ledger" // the agent was told it already holds the file
	OriginDiff   = "diff"   // the agent was shown a diff against a version it held
	OriginEdit   = "edit"   // the agent edited lines of this version
)

// Record is one journal entry. Its canonical form is its JSON encoding
// (fields in this order), and that is what the hash chain covers.
type Record struct {
	Seq     int64     `json:"seq"`
	Kind    string    `json:"kind"`
	Time    time.Time `json:"time"`
	Session string    `json:"session"`
	// Owner is the identity the session belongs to (caller.Owner: uid and
	// pid namespace); the same session id from another owner is another
	// session. Empty on records of journals older than schema 2.
	Owner   string `json:"owner,omitempty"`
	Path    string `json:"path"`
	Pid     uint32 `json:"pid"`
	Uid     uint32 `json:"uid"`
	Process string `json:"process,omitempty"`
	// Cgroup is the process's cgroup (a container's scope): access records.
	Cgroup string `json:"cgroup,omitempty"`
	// Opens is how many opens of the file by the process the kernel
	// reported in the interval (it merges repeats that wait in its queue:
	// a lower bound of the opens made).
	Opens int64 `json:"opens,omitempty"`
	// Count is how many denials a denial record stands for: the mount's
	// repeated denials of one process in one directory by one code within
	// an interval are one record (Path names the first). Absent (0) on a
	// record of one denial, and on every record of an older journal.
	Count int64 `json:"count,omitempty"`

	// Observations.
	Origin           string           `json:"origin,omitempty"`
	RealPath         string           `json:"realPath,omitempty"`
	StatID           string           `json:"statId,omitempty"`
	ContentID        string           `json:"contentId,omitempty"` // "" when the scan was partial
	ViewID           string           `json:"viewId,omitempty"`
	ObsID            string           `json:"id,omitempty"`
	WholeFileVisible bool             `json:"wholeFileVisible,omitempty"`
	Start            int64            `json:"start,omitempty"`
	End              int64            `json:"end,omitempty"`
	Clamped          int              `json:"clamped,omitempty"` // lines cut to max_line_chars
	TotalLines       int64            `json:"totalLines,omitempty"`
	Identity         *fileid.Identity `json:"identity,omitempty"`
	Delivered        int64            `json:"delivered,omitempty"` // bytes shown
	Saved            int64            `json:"saved,omitempty"`     // bytes a ledger notice saved
	// Held, when set, is the lines of this version the session holds
	// through this record (a diff or an edit leaves more than Start-End).
	Held    [][2]int64 `json:"held,omitempty"`
	Anchors bool       `json:"anchors,omitempty"` // lines were shown with their anchors
	// Media: an image was described (and its bytes perhaps sent); no line
	// of it is held, so no whole-view precondition is met by it.
	Media bool `json:"media,omitempty"`

	// Intent is the sequence number of the intent this record is the
	// outcome of (writes and edits).
	Intent int64 `json:"intent,omitempty"`
	// Request is the caller's name for the write or edit an intent is of
	// (api.Request.ID): after a lost connection the caller asks by it.
	Request string `json:"request,omitempty"`
	// Writer is the pid of the process that makes an intent's write (the
	// daemon, or a direct command): while it lives, the intent may still
	// be under way; once it is gone, the file says what happened.
	Writer uint32 `json:"writer,omitempty"`
	// WriterStart is when the writer started (its /proc/PID/stat start
	// time, in clock ticks since boot): with Writer, it names the process
	// even where pids are reused (a container's daemon is PID 1 after
	// every restart). Absent on intents of older versions.
	WriterStart uint64 `json:"writerStart,omitempty"`
	// Temp is the name, in RealPath's directory, that an intent's write
	// gives its new version just before the rename: a writer killed in
	// between leaves that name, which the next start finds by it (and by
	// its content, ContentID) and removes.
	Temp string `json:"temp,omitempty"`

	// Denials.
	Code string `json:"code,omitempty"`
	// Detail says more, in words (history findings).
	Detail string `json:"detail,omitempty"`

	PrevHash string `json:"-"`
	Hash     string `json:"-"`
	// body is the canonical JSON the record was read from (and its hash
	// checked against), so the stream need not encode it again.
	body string
	// journal is the identity of the journal it was read from (ID): on
	// the stream, it and seq name a record across a fleet and across a
	// journal started anew. Not part of the body or its hash.
	journal string
}

// Journal is an open journal.
type Journal struct {
	db   *sql.DB
	path string
	// idOnce, id: the journal's identity, read once for the records it
	// stamps on the stream (see ID).
	idOnce sync.Once
	id     string

	heldMu sync.Mutex
	held   map[heldKey]*heldEntry // see Holding

	// files, when held (HoldFiles), notices the journal's files being
	// deleted or replaced under a long-lived process.
	files *ownFiles

	// key is the mask key (MaskKey), read or made once.
	keyOnce sync.Once
	key     []byte
	keyErr  error
}

// DamageError says the journal is damaged. It is never papered over: a
// damaged journal is not an empty one.
type DamageError struct {
	Path string
	Why  string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("journal %s is damaged: %s; run 'fsguard journal verify' and restore it from a copy", e.Path, e.Why)
}

// DefaultPath is where the journal lives when neither the policy nor
// FSGUARD_JOURNAL says: /var/lib/fsguard/journal.db for root (a service's
// journal must not move with $HOME, and the operator's shell must find the
// daemon's), UserPath for anyone else.
func DefaultPath() string {
	if os.Geteuid() == 0 {
		return SystemPath
	}
	return UserPath()
}

// UserPath is the user's own journal, $XDG_STATE_HOME/fsguard/journal.db
// (~/.local/state when unset), root's included: where a run without a
// policy file journals (LocateUnconfigured).
func UserPath() string {
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		home, _ := os.UserHomeDir()
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "fsguard", "journal.db")
}

// SystemPath is root's default journal (systemd's StateDirectory=fsguard).
const SystemPath = "/var/lib/fsguard/journal.db"

// Locate applies the lookup order: FSGUARD_JOURNAL, the policy's path,
// the default.
func Locate(policyPath string) string {
	if p := os.Getenv("FSGUARD_JOURNAL"); p != "" {
		return p
	}
	if policyPath != "" {
		return policyPath
	}
	return DefaultPath()
}

// LocateUnconfigured is Locate for a run with no policy file (the
// embedded default: someone trying fsguard in a checkout, even as root):
// FSGUARD_JOURNAL, else UserPath — never the service's SystemPath, which
// belongs to the packaged daemon and its policy.
func LocateUnconfigured() string {
	if p := os.Getenv("FSGUARD_JOURNAL"); p != "" {
		return p
	}
	return UserPath()
}

// Open opens (creating if need be) the journal at path, and checks that
// its head is intact.
func Open(path string) (*Journal, error) {
	if err := openable(path); err != nil {
		return nil, err
	}
	db, err := sqlitedb.Open(path, sqlitedb.Full)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	j := &Journal{db: db, path: path}
	if err := j.init(); err != nil {
		db.Close()
		return nil, j.damage(err)
	}
	if err := j.checkHead(); err != nil {
		db.Close()
		return nil, err
	}
	if err := j.remember(); err != nil {
		db.Close()
		return nil, err
	}
	return j, nil
}

// openable names what would stop SQLite opening the journal, which itself
// says only "unable to open database file" for all of it: a directory in
// the journal's place, a file in its directory's, a directory it may not
// write (the WAL needs files beside the journal).
func openable(path string) error {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("journal %s is a directory: name a file (journal.path or FSGUARD_JOURNAL)", path)
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil // made by the opener
	case err != nil:
		return fmt.Errorf("journal %s: its directory: %w", path, err)
	case !fi.IsDir():
		return fmt.Errorf("journal %s: %s is not a directory", path, dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && st.Flags&unix.ST_RDONLY != 0 {
			return fmt.Errorf("journal %s: %s is on a read-only file system; put the journal on a writable one", path, dir)
		}
		return fmt.Errorf("journal %s: this user may not write in %s (%v): the journal keeps its WAL beside it; choose a writable directory", path, dir, err)
	}
	return nil
}

// ID is the journal's identity, made when it was created ("created-at
// random"): a journal deleted, emptied or replaced has another, so what
// remembers the id (the held-content store) can tell it from the one it
// belongs to. Journals older than the id have "".
func (j *Journal) ID() string {
	var id string
	j.db.QueryRow(`SELECT value FROM meta WHERE key = 'journal_id'`).Scan(&id)
	return id
}

// streamID is ID read once: a journal's identity never changes while it
// is open (one started anew is another file, opened anew).
func (j *Journal) streamID() string {
	j.idOnce.Do(func() { j.id = j.ID() })
	return j.id
}

func newID() string {
	var b [6]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Close closes the journal.
func (j *Journal) Close() error {
	j.releaseFiles()
	return j.db.Close()
}

// Path returns the journal's file.
func (j *Journal) Path() string { return j.path }

// diskFull reports (as " (N bytes free)") whether the journal's file system
// has no room left, or "".
func (j *Journal) diskFull() string {
	var st unix.Statfs_t
	if unix.Statfs(filepath.Dir(j.path), &st) != nil {
		return ""
	}
	if free := st.Bavail * uint64(st.Bsize); free < 64<<10 {
		return fmt.Sprintf(" (%d bytes free)", free)
	}
	return ""
}

// damage turns SQLite's corruption errors into a DamageError.
func (j *Journal) damage(err error) error {
	var de *DamageError
	if errors.As(err, &de) {
		return err
	}
	msg := err.Error()
	if full := j.diskFull(); full != "" || strings.Contains(msg, "database or disk is full") {
		// Out of space is not damage: say what to do about it.
		return fmt.Errorf("journal %s: the disk is full%s (%v); free space there, then retry", j.path, full, err)
	}
	for _, s := range []string{"malformed", "not a database", "corrupt", "disk I/O error"} {
		if strings.Contains(msg, s) {
			return &DamageError{Path: j.path, Why: msg}
		}
	}
	return fmt.Errorf("journal %s: %w", j.path, err)
}

const schema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
	seq        INTEGER PRIMARY KEY,
	kind       TEXT NOT NULL,
	time_ns    INTEGER NOT NULL,
	session    TEXT NOT NULL,
	path       TEXT NOT NULL,
	real_path  TEXT NOT NULL,
	content_id TEXT NOT NULL,
	origin     TEXT NOT NULL,
	code       TEXT NOT NULL,
	body       TEXT NOT NULL,
	prev_hash  TEXT NOT NULL,
	hash       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_by_time ON records(time_ns);
`

// migrations[i] brings a journal from schema version i+1 to i+2. A new
// journal is made by the base schema and then every migration.
var migrations = []string{
	// 2: sessions belong to an owner; the ledger's index leads with it.
	`ALTER TABLE records ADD COLUMN owner TEXT NOT NULL DEFAULT '';
	DROP INDEX IF EXISTS records_by_file;
	CREATE INDEX records_by_owner_file ON records(owner, session, real_path, seq);`,
	// 3: the writes' records (intents, and what resolves them: outcomes and
	// the write's or edit's observation) have an index of their own, so a
	// start's look for dangling intents reads them, not every record: that
	// look runs before the mount is up, so it must not grow with the
	// journal's whole history.
	`CREATE INDEX records_writes ON records(seq) WHERE ` + writesWhere + `;`,
}

// writesWhere selects the records of writes: the only ones that are or
// name an intent.
const writesWhere = `kind IN ('intent', 'outcome') OR origin IN ('write', 'edit')`

func (j *Journal) init() error {
	// The common case, an existing journal of this version, needs no write
	// lock: only a new or older journal takes one.
	var v string
	if err := j.db.QueryRow(`SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&v); err == nil && v == strconv.Itoa(SchemaVersion) {
		return nil
	}
	ctx := context.Background()
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(schema); err != nil {
		return err
	}
	from := 1
	err = tx.QueryRow(`SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&v)
	switch {
	case err == sql.ErrNoRows:
		if _, err := tx.Exec(`INSERT INTO meta VALUES ('schema_version', '1'), ('head_seq', '0'), ('head_hash', ?), ('journal_id', ?)`, Genesis, newID()); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		if from, _ = strconv.Atoi(v); from > SchemaVersion {
			return fmt.Errorf("schema version %d is newer than this fsguard (%d): upgrade fsguard", from, SchemaVersion)
		}
	}
	// Migrations run in order inside this transaction: all or nothing.
	for n := from; n < SchemaVersion; n++ {
		if _, err := tx.Exec(migrations[n-1]); err != nil {
			return fmt.Errorf("migrating to schema %d: %w", n+1, err)
		}
	}
	if _, err := tx.Exec(`UPDATE meta SET value = ? WHERE key = 'schema_version'`, strconv.Itoa(SchemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

// checkHead compares the recorded head (kept in the same transaction as
// every append) with the last record, and the file with SQLite's own page
// count, so a torn or truncated file or a deleted last record is damage.
func (j *Journal) checkHead() error {
	// Pages may live in the WAL until a checkpoint, so the main file's
	// size is checked only while the WAL holds no frames (absent or bare
	// header) before and after reading the page count: the state of a
	// journal that its last user closed cleanly.
	walEmpty := func() bool {
		fi, err := os.Stat(j.path + "-wal")
		return err != nil || fi.Size() <= 32
	}
	before := walEmpty()
	var pages, pageSize int64
	if err := j.db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		return j.damage(err)
	}
	if err := j.db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		return j.damage(err)
	}
	// The main file is looked at only after the WAL is seen empty again,
	// so a checkpoint that ran meanwhile has already grown it.
	after := walEmpty()
	if fi, err := os.Stat(j.path); err == nil && before && after && fi.Size() < pages*pageSize {
		return &DamageError{Path: j.path, Why: fmt.Sprintf("the file is %d bytes but holds %d pages of %d: it was truncated", fi.Size(), pages, pageSize)}
	}
	// One statement is one snapshot: a writer committing meanwhile cannot
	// make the head and the last record disagree.
	var seqS, hash string
	var lastSeq sql.NullInt64
	var lastHash sql.NullString
	err := j.db.QueryRow(`SELECT
		(SELECT value FROM meta WHERE key = 'head_seq'),
		(SELECT value FROM meta WHERE key = 'head_hash'),
		(SELECT seq FROM records ORDER BY seq DESC LIMIT 1),
		(SELECT hash FROM records ORDER BY seq DESC LIMIT 1)`).Scan(&seqS, &hash, &lastSeq, &lastHash)
	if err != nil {
		return j.damage(err)
	}
	seq, err := strconv.ParseInt(seqS, 10, 64)
	if err != nil {
		return &DamageError{Path: j.path, Why: "the head is unreadable: " + err.Error()}
	}
	if lastSeq.Int64 != seq || (seq > 0 && lastHash.String != hash) {
		return &DamageError{Path: j.path, Why: fmt.Sprintf("the head says record %d but the last record is %d", seq, lastSeq.Int64)}
	}
	return nil
}

type querier interface {
	QueryRow(query string, args ...any) *sql.Row
}

func (j *Journal) head(q querier) (int64, string, error) {
	var seqS, hash string
	if err := q.QueryRow(`SELECT value FROM meta WHERE key = 'head_seq'`).Scan(&seqS); err != nil {
		return 0, "", err
	}
	if err := q.QueryRow(`SELECT value FROM meta WHERE key = 'head_hash'`).Scan(&hash); err != nil {
		return 0, "", err
	}
	seq, err := strconv.ParseInt(seqS, 10, 64)
	return seq, hash, err
}

// Append commits records in one transaction and fills in their Seq and
// hashes. When it returns nil, the records are durable.
func (j *Journal) Append(recs ...*Record) error {
	if err := j.CheckFiles(); err != nil {
		return err
	}
	tx, err := j.db.Begin() // BEGIN IMMEDIATE (the DSN's _txlock)
	if err != nil {
		return j.damage(err)
	}
	defer tx.Rollback()
	seq, prev, err := j.head(tx)
	if err != nil {
		return j.damage(err)
	}
	// One statement for the batch: parsing the INSERT per record was a
	// fifth of the cost of appending a batch.
	ins, err := tx.Prepare(`INSERT INTO records (seq, kind, time_ns, session, owner, path, real_path, content_id, origin, code, body, prev_hash, hash)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return j.damage(err)
	}
	defer ins.Close()
	for _, r := range recs {
		seq++
		r.Seq = seq
		if r.Time.IsZero() {
			r.Time = time.Now().UTC()
		}
		r.PrevHash = prev
		body, hash := r.seal()
		r.Hash = hash
		if _, err := ins.Exec(r.Seq, r.Kind, r.Time.UnixNano(), r.Session, r.Owner, r.Path, r.RealPath, r.ContentID, r.Origin, r.Code, body, prev, hash); err != nil {
			return j.damage(err)
		}
		prev = hash
	}
	if _, err := tx.Exec(`UPDATE meta SET value = ? WHERE key = 'head_seq'`, strconv.FormatInt(seq, 10)); err != nil {
		return j.damage(err)
	}
	if _, err := tx.Exec(`UPDATE meta SET value = ? WHERE key = 'head_hash'`, prev); err != nil {
		return j.damage(err)
	}
	if err := tx.Commit(); err != nil {
		return j.damage(err)
	}
	// The files are looked at again after the commit: a WAL deleted
	// while this append ran took the commit into an orphaned file, and
	// the records are acknowledged only once a checkpoint copied them
	// into the database.
	if err := j.afterCommit(); err != nil {
		return err
	}
	j.ack(seq) // a mark that could not be written lags; the records are committed
	return nil
}

// Probe proves that the journal can be written now: it commits a
// transaction that changes its meta table (when a writer last did so),
// through the same files and locks as an append, and adds no record. A
// process that must record what it serves (required) probes before it
// serves, and a daemon that could not record probes to learn that it can
// again.
func (j *Journal) Probe() error {
	if err := j.CheckFiles(); err != nil {
		return err
	}
	tx, err := j.db.Begin()
	if err != nil {
		return j.damage(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`INSERT OR REPLACE INTO meta VALUES ('probed_at', ?)`, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return j.damage(err)
	}
	return j.damage0(tx.Commit())
}

func (j *Journal) damage0(err error) error {
	if err == nil {
		return nil
	}
	return j.damage(err)
}

// seal returns the canonical body and the chained hash.
func (r *Record) seal() (string, string) {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // Record has only marshalable fields
	}
	return string(b), chainHash(r.PrevHash, string(b))
}

// chainHash is sha256(prev_hash || body), hex.
func chainHash(prev, body string) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write([]byte(body))
	return hex.EncodeToString(h.Sum(nil))
}
