package refusal

import (
	"fmt"
	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"strings"
)

// Door is a front end that shows refusals in words.
type Door int

// The doors. The mount is none of them: it answers with an errno alone.
const (
	// CLI is fsguard's command line: options are flags (--offset).
	CLI Door = iota
	// Socket is the control socket: the CLI's words, with paths in the
	// caller's view (In is applied before it renders).
	Socket
	// MCP is the MCP server: options are tool arguments (offset).
	MCP
)

// words are a door's names for what a refusal's advice tells the caller
// to use.
type words struct {
	// opt names a request option (a read's window option, by its
	// request name).
	opt func(arg string) string
	// anchorsRead is a read that shows anchors, with an article;
	// withAnchors, the option as a read is asked "again ...".
	anchorsRead, withAnchors string
	// writeTool is the operation that creates a file.
	writeTool string
	// daemon is how a caller reads through the daemon.
	daemon string
}

var cliWords = &words{
	opt:         func(a string) string { return "--" + a },
	anchorsRead: "an --anchors read",
	withAnchors: "with --anchors",
	writeTool:   "fsguard write",
	daemon:      "the daemon (--socket)",
}

var doors = map[Door]*words{
	CLI:    cliWords,
	Socket: cliWords,
	MCP: {
		opt: func(a string) string {
			if a == "window" {
				return "windows"
			}
			return a
		},
		anchorsRead: "a read with anchors: true",
		withAnchors: "with anchors: true",
		writeTool:   "the write tool",
		daemon:      "the daemon (fsguard mcp --socket)",
	},
}

// Reason is a refusal's cause: one stable key per distinct cause, each
// with its code and its words in the table.
type Reason string

// Code is the refusal code of a refusal for r.
func (r Reason) Code() Code {
	if row, ok := table[r]; ok {
		return row.code
	}
	return IOError
}

// Render returns the refusal's message as door d shows it. A message
// carries strings others chose (paths, arguments, details with either):
// whatever a row quotes or not, no control character of theirs reaches
// the caller's terminal raw (termsafe.Escape).
func (e *Error) Render(d Door) string {
	w, ok := doors[d]
	if !ok {
		w = cliWords
	}
	row, ok := table[e.Reason]
	if !ok { // a refusal made without a reason: its code says what it is
		return termsafe.Escape(e.cannot() + string(e.Code) + e.unrecorded())
	}
	return termsafe.Escape(row.text(e, w) + e.unrecorded())
}

// unrecorded is the sentence that ends the message of a denial the journal
// could not record, "" for any other.
func (e *Error) unrecorded() string {
	if e.Unrecorded == "" {
		return ""
	}
	return "; this denial was not recorded in the journal: " + e.Unrecorded
}

// cannot is the common start of a message: `cannot read "<path>": `.
func (e *Error) cannot() string {
	op := e.Op
	if op == "" {
		op = OpRead
	}
	return fmt.Sprintf("cannot %s %q: ", op, e.Path)
}

// quoted shows paths as "a"<sep>"b".
func quoted(ps []string, sep string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = fmt.Sprintf("%q", p)
	}
	return strings.Join(q, sep)
}

type row struct {
	code Code
	text func(e *Error, w *words) string
}

// why is a row whose message is the common start and a fixed cause.
func why(code Code, s string) row {
	return row{code, func(e *Error, _ *words) string { return e.cannot() + s }}
}

// whyf is a row whose cause is rendered from the refusal's facts.
func whyf(code Code, f func(e *Error, w *words) string) row {
	return row{code, func(e *Error, w *words) string { return e.cannot() + f(e, w) }}
}

// invalid is an INVALID_INPUT row whose message names no operation.
func invalid(f func(e *Error, w *words) string) row {
	return row{InvalidInput, func(e *Error, w *words) string { return "invalid input: " + f(e, w) }}
}

// detail is a row whose cause is the refusal's Detail between fixed words.
func detail(code Code, before, after string) row {
	return whyf(code, func(e *Error, _ *words) string { return before + e.Detail + after })
}

func fixed(s string) func(*Error, *words) string { return func(*Error, *words) string { return s } }

// The reasons of the resolver (roots) and the caller's view.
const (
	// The path as sent.
	EmptyPath   Reason = "empty-path"
	NULInPath   Reason = "nul-in-path"
	BadUTF8Path Reason = "bad-utf8-path"
	LongPath    Reason = "long-path" // longer than Limit bytes
	NameTooLong Reason = "name-too-long"

	// Where it lies or leads.
	DangerousName      Reason = "dangerous-path"
	LeadsDangerous     Reason = "leads-dangerous"
	OutsideRoots       Reason = "outside-roots"
	OutsideMount       Reason = "outside-mount" // Detail: the mount as the caller sees it
	LeadsOutside       Reason = "leads-outside"
	LinkOnPathOutside  Reason = "link-on-path-outside"
	AbsoluteLink       Reason = "absolute-link"
	LinkLeadsOutside   Reason = "link-leads-outside"
	DirLeadsOutside    Reason = "dir-leads-outside"
	ChangedResolving   Reason = "changed-resolving"
	PolicyReloaded     Reason = "policy-reloaded"
	NotFoundName       Reason = "not-found" // Suggestions: near names
	LinkLoop           Reason = "link-loop"
	TopHoldsRoots      Reason = "top-holds-roots"
	DeniedName         Reason = "denied-name"
	CredentialInName   Reason = "credential-in-name"
	WriteDeniedRule    Reason = "write-denied" // Rule: the [write] deny glob
	GitDir             Reason = "git-dir"      // Detail: what makes it git's own
	GitHooks           Reason = "git-hooks"    // Detail: which hooks directory
	HookManager        Reason = "hook-manager" // Rule: the hook manager's glob
	NoPermission       Reason = "permission"
	Directory          Reason = "directory"
	SpecialFile        Reason = "special-file" // Kind: the file's type
	NotDirectory       Reason = "not-a-directory"
	IOFailed           Reason = "io-error" // Detail: the errno's text
	IOFailedReading    Reason = "io-error-reading"
	IOFailedRechecking Reason = "io-error-rechecking"
)

// The reasons of admission (admit): content, credentials, hard links.
const (
	DeniedKey          Reason = "denied-content-key"
	DeniedContent      Reason = "denied-content" // Class, MIME
	TooManyMasks       Reason = "too-many-masks" // Limit
	ChangedChecking    Reason = "changed-checking"
	LinksStrict        Reason = "denied-links-strict" // Total: names
	LinksNeedDaemon    Reason = "denied-links-no-index"
	LinkOutsideRoots   Reason = "denied-link-outside"
	LinkDenied         Reason = "denied-link-name"
	ChangedReading     Reason = "changed-reading"
	ChangedReadingEdit Reason = "changed-reading-retry"
	// A packed file (gzip, tar, zip), for what it holds.
	PackedKey        Reason = "packed-key"        // Member
	PackedName       Reason = "packed-name"       // Member, Rule
	PackedCredential Reason = "packed-credential" // Member, Family
	PackedUnchecked  Reason = "packed-unchecked"  // Member (when one is at fault), Detail: the bound
	PackedTwoWays    Reason = "packed-two-ways"   // Member (when one is at fault), Detail: where the readings part
	PackedRefused    Reason = "packed-refused"
)

// The reasons of a read (read): its window options, the file's text.
const (
	NotPositive    Reason = "not-positive"        // Arg, Got
	BadWindow      Reason = "bad-window"          // Arg, Got
	TooManyWindows Reason = "too-many-windows"    // Got, Limit
	NotAnchorArg   Reason = "not-anchor-arg"      // Arg, Got
	NoLineArg      Reason = "no-line-arg"         // Arg, Got
	Conflict       Reason = "conflicting-options" // Options
	Alone          Reason = "option-alone"        // Args: the option, the one it goes with
	OutOfRange     Reason = "out-of-range"        // Arg (what names the line), Line, Total, Unit
	BeyondScan     Reason = "beyond-scan"         // Line, Limit
	BlockTooLarge  Reason = "block-too-large"     // Limit
	DirTooLarge    Reason = "directory-too-large" // Limit
	BinaryFile     Reason = "binary"              // MIME
	NotUTF8        Reason = "not-utf8"            // MIME
	BadUTF8        Reason = "bad-utf8"            // At, MIME if known
	Undecodable    Reason = "undecodable"         // Detail: the decoder's words
	IOFailedRaw    Reason = "io-error-raw"        // Detail
)

// The reasons of a document (a PDF) read by its text.
const (
	DocumentUnreadable Reason = "document-unreadable" // Detail: why
	DocumentKey        Reason = "document-key"
	DocumentCredential Reason = "document-credential" // Family
	TooManyPages       Reason = "too-many-pages"      // Line, End, Limit
	BadPages           Reason = "bad-pages"           // Got
	PagesNotDocument   Reason = "pages-not-document"
	DocumentByPages    Reason = "document-by-pages" // Limit
)

// modeOptions are a read's options that each ask for windows in their own
// way, by their request names: a read takes one of them.
var modeOptions = []string{"offset", "window", "around", "block"}

// units are what an out-of-range refusal counts, one and many; lines are
// always said "lines".
var units = map[string][2]string{"": {"lines", "lines"}, "line": {"lines", "lines"}, "entry": {"entry", "entries"}, "cell": {"cell", "cells"}, "page": {"page", "pages"}}

// The reasons of an edit's plan (edit) and of a session's checks, writes
// and edits (session).
const (
	AnchorNoLine       Reason = "anchor-no-line"  // Anchor
	SpecNotAnchor      Reason = "spec-not-anchor" // Anchor
	EditNotAnchor      Reason = "edit-not-anchor" // Anchor
	OldNewApart        Reason = "old-new-apart"
	NotOneEdit         Reason = "not-one-edit"
	SpecNeedsText      Reason = "spec-needs-text" // Arg: the edit
	TextAlone          Reason = "text-alone"
	UnknownEdit        Reason = "unknown-edit" // Got
	InsertOneAnchor    Reason = "insert-one-anchor"
	NeedsLines         Reason = "needs-lines" // Arg: the edit
	VersionGone        Reason = "version-gone"
	RangeBackwards     Reason = "range-backwards" // Anchor, AnchorTo
	PastEnd            Reason = "past-end"        // Anchor, Total
	AnchorMismatch     Reason = "anchor-mismatch" // Anchor, Line, Now
	LinesNotShown      Reason = "lines-not-shown" // Line, End
	LineNotShown       Reason = "line-not-shown"  // Line
	AnchoredChanged    Reason = "anchored-line-changed"
	LineChanged        Reason = "line-changed" // Line
	EmptyOld           Reason = "empty-old"
	NoMatch            Reason = "no-match"
	Ambiguous          Reason = "ambiguous" // Total: occurrences
	BothForms          Reason = "both-forms"
	NotRead            Reason = "not-read"
	PartRead           Reason = "part-read"
	ChangedSinceRead   Reason = "changed-since-read"
	CreatedMeanwhile   Reason = "created-meanwhile"
	NotRecorded        Reason = "not-recorded"    // Detail: why the journal is missing
	Unrecordable       Reason = "unrecordable"    // Detail: why
	JournalFailed      Reason = "journal-failed"  // Detail
	JournalMissing     Reason = "journal-missing" // Detail: what was there before, if known
	WriteFailed        Reason = "write-failed"    // Detail
	WriteNoAccess      Reason = "write-no-access" // Detail
	NoSuchFile         Reason = "no-such-file"
	TooLargeToEdit     Reason = "too-large-to-edit"      // Limit
	TooManyLinesToEdit Reason = "too-many-lines-to-edit" // Limit
	NotText            Reason = "not-text"
	EncodingFailed     Reason = "encoding-failed"      // Detail
	MasksTooLarge      Reason = "masks-too-large"      // Limit
	MasksTooManyLines  Reason = "masks-too-many-lines" // Limit
	MasksUnplaced      Reason = "masks-unplaced"
	MaskAltered        Reason = "mask-altered"   // Line, At: column
	MaskWritten        Reason = "mask-written"   // Line, At: column
	SecretExposed      Reason = "secret-exposed" // Line, At: column, when known
)

// unobserved is an FS_NOT_OBSERVED row: the session has not seen (all
// of) what it wants to change.
func unobserved(f func(e *Error, w *words) string) row {
	return row{NotObserved, func(e *Error, w *words) string { return e.cannot() + f(e, w) + " — read the file, then retry" }}
}

// masked is an FS_MASKED_SPAN row: why, where, and what to do instead.
func masked(why string) row {
	return whyf(MaskedSpan, func(e *Error, _ *words) string {
		where := ""
		if e.Line > 0 {
			where = fmt.Sprintf(" at line %d, column %d", e.Line, e.At)
		}
		return why + where + "; fsguard shows credentials masked and never writes a mask over one. Keep each masked value exactly as it was shown, on its line (it is restored), or remove the line; to change a credential, edit the file outside the agent"
	})
}

// table is the one table of refusals' words: every reason's code, message
// and advice. The CLI's words are fsguard's stable messages.
var table = map[Reason]row{
	EmptyPath:   invalid(fixed("the path is empty; name a file to read")),
	NULInPath:   invalid(fixed("the path contains a NUL byte; send the path without it")),
	BadUTF8Path: invalid(fixed("the path is not valid UTF-8; send the name as UTF-8")),
	LongPath: invalid(func(e *Error, _ *words) string {
		return fmt.Sprintf("the path is longer than %d bytes", e.Limit)
	}),
	NameTooLong: why(InvalidInput, "the path is too long"),

	DangerousName:  why(DangerousPath, "/proc, /sys and /dev are never read through fsguard"),
	LeadsDangerous: why(DangerousPath, "it leads into /proc, /sys or /dev, which are never read through fsguard"),
	OutsideRoots: whyf(OutsideAllowedRoots, func(e *Error, _ *words) string {
		return "outside the allowed roots (" + quoted(e.Roots, ", ") + "); read a file inside one of them"
	}),
	OutsideMount: whyf(OutsideAllowedRoots, func(e *Error, _ *words) string {
		return "outside the allowed roots (" + e.Detail + "); read a file inside it"
	}),
	LeadsOutside:      why(OutsideAllowedRoots, "the path leads outside the allowed roots (through a symbolic link or a mount point); read a file inside them"),
	LinkOnPathOutside: why(OutsideAllowedRoots, "a symbolic link on the path leads outside the root"),
	AbsoluteLink:      why(OutsideAllowedRoots, "an absolute symbolic link is not followed"),
	LinkLeadsOutside:  why(OutsideAllowedRoots, "the symbolic link leads outside the root"),
	DirLeadsOutside:   why(OutsideAllowedRoots, "the path leads outside the root (through a symbolic link or a mount point); list a directory inside it"),
	ChangedResolving:  why(ChangedDuringRead, "the path changed while it was being resolved; read it again"),
	PolicyReloaded:    why(ChangedDuringRead, "the policy was reloaded during the call; retry"),
	NotFoundName: whyf(NotFound, func(e *Error, _ *words) string {
		if len(e.Suggestions) > 0 {
			return "not found; did you mean " + quoted(e.Suggestions, " or ") + "?"
		}
		return "not found; check the path (fsguard resolves it relative to the current directory)"
	}),
	LinkLoop:         why(NotFound, "too many levels of symbolic links (a link loop); name the file itself"),
	TopHoldsRoots:    why(NotFound, "not found; the top of the mount holds only the roots"),
	DeniedName:       why(Denied, "denied by policy; this path is not available to the agent"),
	CredentialInName: why(Denied, "its name holds a credential (a token), and a name cannot be masked, so fsguard hides it; rename the file on the host to a name without the token, and revoke the token"),
	WriteDeniedRule: whyf(WriteDenied, func(e *Error, _ *words) string {
		return fmt.Sprintf("the policy does not let the agent write here (rule %q in [write] deny_globs): files the host runs on its own are not the agent's to change; leave this change to a person", e.Rule)
	}),
	GitDir: whyf(WriteDenied, func(e *Error, _ *words) string {
		return e.Detail + ": git runs the commands its own files name (hooks, core.fsmonitor, filters), so they are not the agent's to change, whatever the policy; leave this change to a person"
	}),
	GitHooks: whyf(WriteDenied, func(e *Error, _ *words) string {
		return e.Detail + ": git runs the hooks there as whoever commits next, so they are not the agent's to change, whatever the policy; leave this change to a person"
	}),
	HookManager: whyf(WriteDenied, func(e *Error, _ *words) string {
		return fmt.Sprintf("a hook manager's file (%q): the commands it names run on the host at the next commit; leave this change to a person, or let the agent change what commits run with [write] hook_managers = \"allow\"", e.Rule)
	}),
	NoPermission: why(PermissionDenied, "permission denied: fsguard acts with the caller's own rights, and this user may not open it; ask for access, or read another file"),
	Directory:    why(NotAFile, "not a regular file (directory); list it with ls, or read a file inside it"),
	SpecialFile: whyf(NotAFile, func(e *Error, _ *words) string {
		return "not a regular file (" + e.Kind + "); fsguard reads only regular files"
	}),
	NotDirectory:       why(NotAFile, "not a directory"),
	IOFailed:           detail(IOError, "I/O error (", "); try again, and report it if it persists"),
	IOFailedReading:    detail(IOError, "I/O error while reading (", "); try again"),
	IOFailedRechecking: detail(IOError, "I/O error (", "); try again"),

	DeniedKey: why(Denied, "the content is a private key, which the policy never shows"),
	DeniedContent: whyf(Denied, func(e *Error, _ *words) string {
		return fmt.Sprintf("the policy refuses %s content (%s)", e.Class, e.MIME)
	}),
	TooManyMasks: whyf(Denied, func(e *Error, _ *words) string {
		return fmt.Sprintf("it holds more than %d credentials, more than fsguard masks in one file; if they are test fixtures, the operator can list the file in [secrets] allow_globs", e.Limit)
	}),
	ChangedChecking: why(ChangedDuringRead, "the file changed while it was checked for credentials; read it again"),
	LinksStrict: whyf(Denied, func(e *Error, _ *words) string {
		return fmt.Sprintf(`the file has %d names (hard links) and the policy shows no such file ([deny] hard_links = "strict"); read it under its only name, or set hard_links = "known"`, e.Total)
	}),
	LinksNeedDaemon: whyf(Denied, func(e *Error, w *words) string {
		return fmt.Sprintf(`the file has %d names (hard links), and only the fsguard daemon keeps the index that shows they are all inside the roots and allowed; read it through %s, or set [deny] hard_links = "allow" (e.g. for pnpm's node_modules, whose files are links into a store)`, e.Total, w.daemon)
	}),
	LinkOutsideRoots: why(Denied, "another name (hard link) of this file lies outside the allowed roots, and the policy shows such files under none ([deny] hard_links = \"inside\"; \"known\" judges them like any file)"),
	LinkDenied:       why(Denied, "another name (hard link) of this file is denied by policy; the policy shows it under none ([deny] hard_links)"),
	PackedKey: whyf(Denied, func(e *Error, _ *words) string {
		return fmt.Sprintf("it is packed (gzip, tar or zip) and its member %q is or holds a private key, which the policy never shows", e.Member)
	}),
	PackedName: whyf(Denied, func(e *Error, _ *words) string {
		return fmt.Sprintf("it is packed (gzip, tar or zip) and its member %q is denied by policy (rule %q in [deny] globs); the archive is not available to the agent", e.Member, e.Rule)
	}),
	PackedCredential: whyf(Denied, func(e *Error, _ *words) string {
		return fmt.Sprintf("it is packed (gzip, tar or zip) and its member %q holds a credential (%s), which fsguard masks in text but cannot mask inside packed bytes; if it is a test fixture, the operator can list the file in [secrets] allow_globs", e.Member, e.Family)
	}),
	PackedUnchecked: whyf(ArchiveUnchecked, func(e *Error, _ *words) string {
		at := ""
		if e.Member != "" {
			at = fmt.Sprintf(" at member %q", e.Member)
		}
		return fmt.Sprintf("it is packed (gzip, tar or zip) and cannot be checked within fsguard's bounds (%s%s), and fsguard never serves a packed file it has not looked into; unpack it where the agent can read the files one by one, or the operator can list it in [sniff] allow_globs or set [sniff] archives = \"allow\"", e.Detail, at)
	}),
	PackedTwoWays: whyf(ArchiveUnchecked, func(e *Error, _ *words) string {
		at := ""
		if e.Member != "" {
			at = fmt.Sprintf(" at member %q", e.Member)
		}
		return fmt.Sprintf("it is a zip that extractors read two ways (%s%s): one that streams its local headers and one that reads its central directory would unpack different files, so fsguard cannot say what it holds and does not guess; make the zip again from its files with an ordinary tool (zip, jar), or the operator can list it in [sniff] allow_globs", e.Detail, at)
	}),
	PackedRefused:      why(Denied, `it is packed (gzip, tar or zip), and the policy refuses packed files ([sniff] archives = "deny"); read the files it was made from`),
	ChangedReading:     why(ChangedDuringRead, "the file changed while it was being read; read it again"),
	ChangedReadingEdit: why(ChangedDuringRead, "the file changed while it was being read; retry"),

	NotPositive: invalid(func(e *Error, w *words) string {
		return fmt.Sprintf("%s must be a positive integer, got %q", w.opt(e.Arg), e.Got)
	}),
	BadWindow: invalid(func(e *Error, w *words) string {
		return fmt.Sprintf("%s %q: give START:END line numbers, 1 <= START <= END (e.g. %s 10:40)", w.opt(e.Arg), e.Got, w.opt(e.Arg))
	}),
	TooManyWindows: invalid(func(e *Error, _ *words) string {
		return fmt.Sprintf("%s windows; at most %d in one read", e.Got, e.Limit)
	}),
	NotAnchorArg: invalid(func(e *Error, w *words) string {
		return fmt.Sprintf("%s %q is not an anchor; use N#hh as %s shows it (e.g. 12#a3)", w.opt(e.Arg), e.Got, w.anchorsRead)
	}),
	NoLineArg: invalid(func(e *Error, w *words) string {
		return fmt.Sprintf("%s %q names no line", w.opt(e.Arg), e.Got)
	}),
	Conflict: invalid(func(e *Error, w *words) string {
		given, all := make([]string, len(e.Options)), make([]string, len(modeOptions))
		for i, a := range e.Options {
			given[i] = w.opt(a)
		}
		for i, a := range modeOptions {
			all[i] = w.opt(a)
		}
		return fmt.Sprintf("%s ask for windows in different ways; give one of %s and %s",
			strings.Join(given, " and "), strings.Join(all[:len(all)-1], ", "), all[len(all)-1])
	}),
	Alone: invalid(func(e *Error, w *words) string {
		return fmt.Sprintf("%s goes with %s N#hh", w.opt(e.Options[0]), w.opt(e.Options[1]))
	}),
	OutOfRange: {OffsetOutOfRange, func(e *Error, _ *words) string {
		u, n := units[e.Unit], e.Total
		unit := u[1]
		if n == 1 {
			unit = u[0]
		}
		return fmt.Sprintf("%s %d is out of range for %q (%d %s)", e.Arg, e.Line, e.Path, n, unit)
	}},
	BeyondScan: whyf(TooLarge, func(e *Error, _ *words) string {
		return fmt.Sprintf("line %d lies beyond the first %d bytes, which is as far as fsguard scans (max_scan_bytes)", e.Line, e.Limit)
	}),
	BlockTooLarge: whyf(TooLarge, func(e *Error, _ *words) string {
		return fmt.Sprintf("block needs the whole file, and it is larger than max_scan_bytes (%d); read a window with offset and limit", e.Limit)
	}),
	DirTooLarge: whyf(TooLarge, func(e *Error, _ *words) string {
		return fmt.Sprintf("the directory has more than %d entries, more than fsguard lists in one read (max_dir_entries); read the files in it by name, or list a subdirectory", e.Limit)
	}),
	BinaryFile: whyf(Binary, func(e *Error, _ *words) string {
		return "binary file (" + e.MIME + "); fsguard shows text files only"
	}),
	NotUTF8: whyf(Encoding, func(e *Error, _ *words) string {
		return "not UTF-8 (" + e.MIME + "); fsguard shows UTF-8 text only"
	}),
	BadUTF8: whyf(Encoding, func(e *Error, _ *words) string {
		if e.MIME != "" {
			return fmt.Sprintf("invalid UTF-8 at byte %d (%s); fsguard shows UTF-8 text only", e.At, e.MIME)
		}
		return fmt.Sprintf("invalid UTF-8 at byte %d; fsguard shows UTF-8 text only", e.At)
	}),
	Undecodable: detail(Encoding, "", "; fsguard shows UTF-8, and UTF-16 or UTF-32 with a byte order mark"),
	IOFailedRaw: detail(IOError, "", ""),

	DocumentUnreadable: whyf(UnreadableDocument, func(e *Error, _ *words) string {
		return "the document (PDF) cannot be read: " + e.Detail + "; fsguard reads documents in a sandbox with bounds on size, time and memory, and refuses what it cannot read within them"
	}),
	DocumentKey: why(Denied, "the document's text holds a private key, which the policy never shows"),
	DocumentCredential: whyf(Denied, func(e *Error, _ *words) string {
		return fmt.Sprintf("the document's text holds a credential (%s), which fsguard masks in the text it shows but cannot mask inside the document; read its text instead", e.Family)
	}),
	TooManyPages: invalid(func(e *Error, w *words) string {
		return fmt.Sprintf("pages %d-%d are more than %d; read at most %d pages a call (%s A-B)", e.Line, e.End, e.Limit, e.Limit, w.opt("pages"))
	}),
	BadPages: invalid(func(e *Error, w *words) string {
		return fmt.Sprintf("%s %q is not a page range; give N or A-B, pages counted from 1", w.opt("pages"), e.Got)
	}),
	DocumentByPages: invalid(func(e *Error, w *words) string {
		return fmt.Sprintf("%q is a document (a PDF), read by pages, not lines: use %s A-B, at most %d pages a call", e.Path, w.opt("pages"), e.Limit)
	}),
	PagesNotDocument: invalid(func(e *Error, w *words) string {
		return fmt.Sprintf("%s selects pages of a document (a PDF), and %q is not one; read it with offset and limit", w.opt("pages"), e.Path)
	}),

	AnchorNoLine: invalid(func(e *Error, _ *words) string { return fmt.Sprintf("anchor %q names no line", e.Anchor) }),
	SpecNotAnchor: invalid(func(e *Error, w *words) string {
		return fmt.Sprintf("%q is not an anchor; use N#hh (or N#hh..M#hh) as %s shows it, e.g. 12#a3", e.Anchor, w.anchorsRead)
	}),
	EditNotAnchor: invalid(func(e *Error, w *words) string {
		return fmt.Sprintf("%q is not an anchor; use N#hh as %s shows it (e.g. 12#a3)", e.Anchor, w.anchorsRead)
	}),
	OldNewApart:   invalid(fixed("the old text and the new text go together (an empty new text deletes the old)")),
	NotOneEdit:    invalid(fixed("give exactly one edit: replace, insert after, delete, or old and new text")),
	SpecNeedsText: invalid(func(e *Error, _ *words) string { return e.Arg + " needs the new lines (text)" }),
	TextAlone:     invalid(fixed("text goes with replace or insert after")),
	UnknownEdit: invalid(func(e *Error, _ *words) string {
		return fmt.Sprintf("unknown edit %q; use replace, insert or delete", e.Got)
	}),
	InsertOneAnchor: invalid(fixed("insert takes one anchor, the line to insert after")),
	NeedsLines: invalid(func(e *Error, _ *words) string {
		return e.Arg + " needs the new lines (text); to remove lines use delete"
	}),
	VersionGone: whyf(StaleVersion, func(e *Error, w *words) string {
		return "it changed since your last read, and the version you read is no longer kept; read the lines again " + w.withAnchors + ", then retry"
	}),
	RangeBackwards: invalid(func(e *Error, _ *words) string {
		return "the range " + e.Anchor + ".." + e.AnchorTo + " runs backwards"
	}),
	PastEnd: invalid(func(e *Error, _ *words) string {
		return fmt.Sprintf("anchor %s is past the end of the version you last read (%d lines)", e.Anchor, e.Total)
	}),
	AnchorMismatch: whyf(StaleVersion, func(e *Error, w *words) string {
		return fmt.Sprintf("anchor %s does not match line %d of the version you last read (it is %s); read the lines again %s, then retry", e.Anchor, e.Line, e.Now, w.withAnchors)
	}),
	LinesNotShown: unobserved(func(e *Error, _ *words) string {
		return fmt.Sprintf("lines %d-%d were not all shown to you", e.Line, e.End)
	}),
	LineNotShown: unobserved(func(e *Error, _ *words) string { return fmt.Sprintf("line %d was not shown to you", e.Line) }),
	AnchoredChanged: whyf(StaleVersion, func(e *Error, w *words) string {
		return fmt.Sprintf("line %d changed since you read it; read it again %s, then retry", e.Line, w.withAnchors)
	}),
	LineChanged: whyf(StaleVersion, func(e *Error, _ *words) string {
		return fmt.Sprintf("line %d changed since you read it; read it again, then retry", e.Line)
	}),
	EmptyOld: invalid(fixed("the text to replace is empty; give an anchored insert to add lines")),
	NoMatch:  why(EditNoMatch, "the text to replace was not found; read the lines again and copy them exactly, whitespace included"),
	Ambiguous: whyf(EditAmbiguous, func(e *Error, _ *words) string {
		return fmt.Sprintf("the text to replace occurs %d times; include more of the surrounding lines so it occurs once", e.Total)
	}),
	BothForms:        invalid(fixed("give either an anchored edit (replace, insert or delete) or old and new text, not both")),
	NotRead:          unobserved(fixed("file has not been read")),
	PartRead:         unobserved(fixed("only part of the file has been read, and the policy requires the whole")),
	ChangedSinceRead: why(StaleVersion, "file changed since it was read — re-read the file, then retry"),
	CreatedMeanwhile: why(StaleVersion, "it was created meanwhile — read the file, then retry"),
	NotRecorded:      detail(IOError, "nothing was recorded in the journal (", "); a later write will need a re-read"),
	Unrecordable:     detail(IOError, "the journal cannot record it (", "), and the policy requires a record of every read ([journal] required = true); fix the journal, then retry"),
	JournalFailed:    detail(IOError, "the journal cannot record the write (", "); nothing was written — free the journal's disk, then retry"),
	JournalMissing: {NoJournal, func(e *Error, _ *words) string {
		return fmt.Sprintf("no journal at %s: %s", e.Path, e.Detail)
	}},
	WriteFailed:   detail(IOError, "", ""),
	WriteNoAccess: detail(PermissionDenied, "", ""),
	NoSuchFile:    whyf(NotFound, func(e *Error, w *words) string { return "no such file; create it with " + w.writeTool }),
	TooLargeToEdit: whyf(TooLarge, func(e *Error, _ *words) string {
		return fmt.Sprintf("it is larger than %d bytes, the most fsguard edit rewrites", e.Limit)
	}),
	TooManyLinesToEdit: whyf(TooLarge, func(e *Error, w *words) string {
		return fmt.Sprintf("it has more than %d lines, the most fsguard edit plans on; replace it whole with %s", e.Limit, w.writeTool)
	}),
	NotText:        why(Encoding, "it is not UTF-8 text (nor UTF-16 or UTF-32 with a byte order mark)"),
	EncodingFailed: detail(Encoding, "", ""),
	MasksTooLarge: whyf(TooLarge, func(e *Error, _ *words) string {
		return fmt.Sprintf("it holds masked credentials, and content larger than %d bytes cannot be checked for their masks", e.Limit)
	}),
	MasksTooManyLines: whyf(TooLarge, func(e *Error, _ *words) string {
		return fmt.Sprintf("it holds masked credentials, and text of more than %d lines cannot be checked for their masks", e.Limit)
	}),
	MasksUnplaced: masked("its masks could not be placed on its lines"),
	MaskAltered:   masked("a masked credential of this file is still there, altered or moved"),
	MaskWritten:   masked("it holds a masked credential"),
	SecretExposed: masked("a credential it keeps would be shown unmasked where it now stands (the text around its mask changed, or the file is no longer text)"),
}
