package warm

import "fmt"

// WalkState says how far the first warm walk got, for `fsguard status`:
// "off" (the policy has no walk, or the mount cannot warm: see
// Target.Warming), "in progress", "done", "done at its byte budget (N
// directories left for the history check)", or "stopped" (it ended before
// it could say: unmounting, or its lister did not start).
func (e *Engine) WalkState() string {
	select {
	case <-e.walked:
	default:
		return "in progress"
	}
	m := e.t.Policy().Mount
	switch {
	case e.walkedOK && len(e.unlisted) > 0:
		return fmt.Sprintf("done at its byte budget (%d directories left for the history check)", len(e.unlisted))
	case e.walkedOK:
		return "done"
	case !m.Warm || !m.WarmWalk || !e.On():
		return "off"
	}
	return "stopped"
}
