package session

import (
	"testing"

	"github.com/fsguard/fsguard/internal/concept/refusal"
)

// TestExitStatusesAreOneTable: every answer's exit status is the one
// ExitStatuses gives its refusal code, each status is one row, and the
// write preconditions have statuses of their own.
func TestExitStatusesAreOneTable(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for i, s := range ExitStatuses {
		if s.Exit != i || seen[s.Exit] {
			t.Errorf("row %d is exit %d: the table is 0, 1, 2, ... in order, once each", i, s.Exit)
		}
		seen[s.Exit] = true
	}
	for reason, want := range map[refusal.Reason]int{
		refusal.NotRead: ExitNotObserved, refusal.ChangedSinceRead: ExitStale,
		refusal.EmptyPath: ExitFail, refusal.NoMatch: ExitFail, refusal.NotFoundName: ExitFail,
	} {
		err := refusal.Of(reason, refusal.OpModify, "f", refusal.Facts{})
		code := err.Code
		for name, out := range map[string]Output{"check": RenderCheck(nil, err), "write": RenderWrite(nil, err), "edit": RenderEdit(nil, err)} {
			if out.Exit != want || out.Exit != ExitOf(code) || out.Code != string(code) {
				t.Errorf("%s refused %s: exit %d code %q, want %d", name, code, out.Exit, out.Code, want)
			}
		}
	}
}
