package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// shownLine is line n of a text-format read's answer ("n: text"), as the
// agent sees it.
func shownLine(t *testing.T, out string, n int) string {
	t.Helper()
	prefix := fmt.Sprintf("%d: ", n)
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimPrefix(l, prefix)
		}
	}
	t.Fatalf("line %d not in the read's answer:\n%.600s", n, out)
	return ""
}

// githubSample is the detector's own sample of a GitHub classic token.
func githubSample(t *testing.T) sniff.Sample {
	t.Helper()
	for _, s := range sniff.SampleCredentials(20261207) {
		if s.Family == "github-pat" {
			return s
		}
	}
	t.Fatal("the detector makes no github-pat sample")
	return sniff.Sample{}
}

// fillRun is a mask's fill as a read shows it.
var fillRun = regexp.MustCompile(`\*{8,}`)

// TestAttackRestoredSecretOutOfContext is an agent that wants a
// credential's bytes: it reads a file (the credential shown masked), then
// writes the masked value back in a changed line, its mask and the four
// bytes before it unchanged (so the write restores the secret) but glued
// to a byte before and after that the detector does not accept around a
// credential. The file now holds the secret where it is no longer
// recognised, and the agent's next read shows it whole.
func TestAttackRestoredSecretOutOfContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	env := []string{"FSGUARD_POLICY=" + f.policy, "FSGUARD_JOURNAL=" + filepath.Join(f.base, "j.db")}
	var leaked []string
	shown := 0
	for i, s := range sniff.SampleCredentials(20261207) {
		name := fmt.Sprintf("w%02d-%s.txt", i, s.Family)
		writeFile(t, filepath.Join(f.root, name), "first\nvalue: "+s.Value+"\nlast\n", 0o644)
		senv := append(env, "FSGUARD_SESSION=agent-"+name)
		out, _, code, _ := runBinary(t, f.root, senv, "", "read", name)
		if code != 0 || strings.Contains(out, s.Secret) {
			continue // refused whole, or not masked: other tests' business
		}
		line := shownLine(t, out, 2)
		loc := fillRun.FindStringIndex(line)
		if loc == nil {
			continue
		}
		shown++
		// The mask with the four bytes before it: what restore keys on.
		key := line[max(0, loc[0]-4):loc[1]]
		next := "first\nX" + key + "Z\nlast\n"
		if _, errs, code, _ := runBinary(t, f.root, senv, next, "write", name); code != 0 {
			t.Logf("%s: write refused (held): %s", s.Family, strings.TrimSpace(errs))
			continue
		}
		again, _, _, _ := runBinary(t, f.root, senv, "", "read", name, "--no-dedupe")
		if strings.Contains(again, s.Secret) {
			leaked = append(leaked, s.Family)
		}
	}
	if shown == 0 {
		t.Fatal("no credential was shown masked: the attack tried nothing")
	}
	if len(leaked) > 0 {
		t.Errorf("%d of %d masked families: a write that glued their mask to new bytes restored the secret where it is no longer masked, and the next read showed it whole: %v", len(leaked), shown, leaked)
	}
}

// TestAttackContentIDConfirmsGuesses is an agent guessing a masked
// password offline: a read's answer names the version by contentId, the
// sha256 of its bytes, and the agent knows every byte of them but the
// mask's (whose length the mask tells). Hashing the shown text with each
// guess in place of the mask confirms the right one: the answer must not
// carry a hash of the unmasked bytes.
func TestAttackContentIDConfirmsGuesses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const password = "hunter22"
	writeFile(t, filepath.Join(f.root, "db.txt"), "DB=postgres://app:"+password+"@db.internal:5432/app\n", 0o644)
	env := []string{"FSGUARD_POLICY=" + f.policy, "FSGUARD_JOURNAL=" + filepath.Join(f.base, "j.db"), "FSGUARD_SESSION=guess"}
	out, errs, code, _ := runBinary(t, f.root, env, "", "read", "db.txt", "--format", "json")
	if code != 0 {
		t.Fatalf("read: exit %d: %s%s", code, out, errs)
	}
	var ans struct {
		Lines []struct {
			Text string `json:"text"`
		} `json:"lines"`
		Observation map[string]any `json:"observation"`
	}
	if err := json.Unmarshal([]byte(out), &ans); err != nil || len(ans.Lines) != 1 {
		t.Fatalf("answer: %v\n%s", err, out)
	}
	shown := ans.Lines[0].Text
	if strings.Contains(shown, password) {
		t.Fatalf("the password is shown: %s", shown)
	}
	loc := regexp.MustCompile(`\*+`).FindStringIndex(shown)
	if loc == nil {
		t.Fatalf("no mask shown: %s", shown)
	}
	// The agent's dictionary: guesses of the mask's length.
	var guesses []string
	for _, w := range []string{"password", "letmein1", "qwerty12", "hunter22", "admin123", "welcome1"} {
		if len(w) == loc[1]-loc[0] {
			guesses = append(guesses, w)
		}
	}
	for k, v := range ans.Observation {
		h, ok := v.(string)
		if !ok {
			continue
		}
		for _, g := range guesses {
			sum := sha256.Sum256([]byte(shown[:loc[0]] + g + shown[loc[1]:] + "\n"))
			if hex.EncodeToString(sum[:]) == h {
				t.Errorf("the read's observation.%s is the sha256 of the unmasked file: the guess %q is confirmed offline", k, g)
			}
		}
	}
}

// TestAttackEscapedContextHidesToken places each credential where logs
// and serialised data keep them: after a JSON string's escaped newline or
// tab ("...\nghp_..."), and after a URL-encoded space or '='
// (Bearer%20ghp_..., token%3Dghp_...). The byte before the credential is
// then a letter or digit of the escape, yet the credential is as real as
// ever: every door must show it masked.
func TestAttackEscapedContextHidesToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	env := []string{"FSGUARD_POLICY=" + f.policy, "FSGUARD_JOURNAL=" + filepath.Join(f.base, "j.db"), "FSGUARD_SESSION=esc"}
	contexts := map[string]func(v string) string{
		"json-newline": func(v string) string { return `{"level":"debug","msg":"auth header follows\n` + v + `"}` },
		"json-tab":     func(v string) string { return `{"msg":"token:\t` + v + `"}` },
		"url-space":    func(v string) string { return "GET /api?auth=Bearer%20" + v + " HTTP/1.1" },
		"url-equals":   func(v string) string { return "GET /cb?q=token%3D" + v + " HTTP/1.1" },
	}
	leaked := map[string][]string{}
	tried := 0
	for _, s := range sniff.SampleCredentials(20261207) {
		// Bare tokens only: a value with its own context (a URL's
		// password, key=value pairs) is placed as it is found.
		if strings.ContainsAny(s.Value, " =/:;") {
			continue
		}
		for cname, place := range contexts {
			name := fmt.Sprintf("esc-%s-%s.log", s.Family, cname)
			writeFile(t, filepath.Join(f.root, name), "first\n"+place(s.Value)+"\nlast\n", 0o644)
			out, errs, _, _ := runBinary(t, f.root, env, "", "read", name, "--no-dedupe")
			tried++
			if strings.Contains(out+errs, s.Secret) {
				leaked[cname] = append(leaked[cname], s.Family)
			}
		}
	}
	for cname, fams := range leaked {
		t.Errorf("%s: %d families shown unmasked: %v", cname, len(fams), fams)
	}
	t.Logf("%d placements tried", tried)
}

// TestAttackWriteMaskOverSecret is a write that carries a mask back in a
// changed line: quoted (as a formatter quotes a YAML value), or its fill
// alone after a space. Neither restores the secret (the bytes before the
// fill changed), so the write must be refused: it is never allowed to
// replace the secret with its mask.
func TestAttackWriteMaskOverSecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	env := []string{"FSGUARD_POLICY=" + f.policy, "FSGUARD_JOURNAL=" + filepath.Join(f.base, "j.db")}
	variants := map[string]func(shown, fill string) string{
		"quoted":    func(shown, _ string) string { return `value: "` + shown + `"` },
		"fill-only": func(_, fill string) string { return "changed " + fill },
	}
	destroyed := map[string][]string{}
	for i, s := range sniff.SampleCredentials(20261207) {
		for vname, variant := range variants {
			name := fmt.Sprintf("d%02d-%s-%s.yaml", i, s.Family, vname)
			p := filepath.Join(f.root, name)
			writeFile(t, p, "first\nvalue: "+s.Value+"\nlast\n", 0o644)
			senv := append(env, "FSGUARD_SESSION=destroy-"+name)
			out, _, code, _ := runBinary(t, f.root, senv, "", "read", name)
			if code != 0 {
				continue
			}
			line := strings.TrimPrefix(shownLine(t, out, 2), "value: ")
			fill := fillRun.FindString(line)
			if fill == "" {
				continue
			}
			next := "first\n" + variant(line, fill) + "\nlast\n"
			if _, _, code, _ := runBinary(t, f.root, senv, next, "write", name); code != 0 {
				continue // refused: held
			}
			if !strings.Contains(string(mustRead(t, p)), s.Secret) {
				destroyed[vname] = append(destroyed[vname], s.Family)
			}
		}
	}
	for vname, fams := range destroyed {
		t.Errorf("%s: %d families' secrets replaced by their mask: %v", vname, len(fams), fams)
	}
}

// TestAttackWriteMakesFileBinary is an agent that leaves its masked line
// exactly as shown (so the write restores the secret) and adds one NUL
// byte on another line: the file is then classified binary, which the
// mount serves unmasked. It must not read the secret back through the
// mount.
func TestAttackWriteMakesFileBinary(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pat := githubSample(t)
	writeFile(t, filepath.Join(f.root, "cfg.txt"), "first\nTOKEN="+pat.Value+"\nlast\n", 0o644)
	sock := filepath.Join(f.base, "ctl.sock")
	startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	env := []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=nul"}
	out, errs, code, _ := runBinary(t, f.mp, env, "", "read", "cfg.txt")
	if code != 0 || strings.Contains(out, pat.Secret) {
		t.Fatalf("read: exit %d\n%s%s", code, out, errs)
	}
	next := "first\x00\nTOKEN=" + shownLine(t, out, 2)[len("TOKEN="):] + "\nlast\n"
	if _, errs, code, _ := runBinary(t, f.mp, env, next, "write", "cfg.txt"); code != 0 {
		t.Logf("write refused (held): %s", errs)
		return
	}
	if !strings.Contains(string(mustRead(t, filepath.Join(f.root, "cfg.txt"))), pat.Secret) {
		t.Fatal("the write did not restore the secret: the attack did not take place")
	}
	// The mount may serve the old version's pages until it sees the
	// change: poll, a hang guard only.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(filepath.Join(f.mp, "cfg.txt"))
		if err == nil && strings.Contains(string(b), pat.Secret) {
			t.Fatal("after a write that added a NUL byte, the mount serves the file (classified binary) with its credential unmasked")
		}
		if err == nil && strings.Contains(string(b), "\x00") {
			return // the new version, served masked or refused: held
		}
		if err != nil {
			return // hidden: held
		}
	}
}
