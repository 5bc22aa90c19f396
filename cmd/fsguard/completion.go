package main

import (
	"fmt"
	"io"
	"strings"
)

// flagsOf lists each command's flags for completion.
var flagsOf = map[string]string{
	"read":       "--offset --limit --window --around --radius --block --format --anchors --policy --session --no-dedupe --socket",
	"check":      "--policy --session --socket --format",
	"write":      "--policy --session --socket --id --format",
	"status":     "--policy --socket --format",
	"health":     "--socket --format",
	"edit":       "--replace --insert-after --delete --text --old --new --policy --session --socket --format",
	"journal":    "query tail stats verify export --session --path --since --until --kind --process --after --append-to --format -f --follow --reopen -n --jsonl --policy",
	"policy":     "check",
	"completion": "bash zsh fish",
	"mount":      "--policy --allow-other --socket --session --debug",
	"unmount":    "--lazy --format",
	"version":    "--format",
	"mcp":        "--policy --socket --session --resume",
}

// valuesOf lists the values a flag takes, per command ("" for all).
var valuesOf = map[string]string{
	"format":         "text json",
	"journal/format": "table json",
	"kind":           "observation denial access eviction intent outcome history",
}

// values returns the values of flag for command cmd, or "".
func values(cmd, flag string) string {
	if v, ok := valuesOf[cmd+"/"+flag]; ok {
		return v
	}
	return valuesOf[flag]
}

func runCompletion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh" && args[0] != "fish") {
		code := exitUsage
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
			code = 0
		}
		fmt.Fprint(stderr, `usage: fsguard completion bash|zsh|fish

Prints a shell completion script: subcommands, each one's flags, and the
values of --format and --kind.

examples:
  source <(fsguard completion bash)
  fsguard completion zsh > "${fpath[1]}/_fsguard"
  fsguard completion fish > ~/.config/fish/completions/fsguard.fish
`)
		return code
	}
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	var cases, valueCases strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&cases, "    %s) opts=%q ;;\n", c.name, flagsOf[c.name])
		for _, f := range strings.Fields(flagsOf[c.name]) {
			if v := values(c.name, strings.TrimLeft(f, "-")); v != "" {
				fmt.Fprintf(&valueCases, "    %s/%s) vals=%q ;;\n", c.name, f, v)
			}
		}
	}
	if args[0] == "fish" {
		fish(stdout, names)
		return 0
	}
	if args[0] == "bash" {
		fmt.Fprintf(stdout, `# bash completion for fsguard
_fsguard() {
  local cur=${COMP_WORDS[COMP_CWORD]} opts
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W %q -- "$cur")); return
  fi
  local vals=""
  case ${COMP_WORDS[1]}/${COMP_WORDS[COMP_CWORD-1]} in
%s    *) ;;
  esac
  if [ -n "$vals" ]; then
    COMPREPLY=($(compgen -W "$vals" -- "$cur")); return
  fi
  case ${COMP_WORDS[1]} in
%s    *) opts="" ;;
  esac
  if [[ $cur == -* || ( ${COMP_WORDS[1]} == journal || ${COMP_WORDS[1]} == policy || ${COMP_WORDS[1]} == completion ) && $COMP_CWORD -eq 2 ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _fsguard fsguard
`, strings.Join(names, " "), valueCases.String(), cases.String())
		return 0
	}
	fmt.Fprintf(stdout, `#compdef fsguard
# zsh completion for fsguard
_fsguard() {
  local opts vals=""
  if (( CURRENT == 2 )); then
    compadd -- %s; return
  fi
  case $words[2]/$words[CURRENT-1] in
%s    *) ;;
  esac
  if [[ -n $vals ]]; then
    compadd -- ${=vals}; return
  fi
  case $words[2] in
%s    *) opts="" ;;
  esac
  if [[ $words[CURRENT] == -* || ( ( $words[2] == journal || $words[2] == policy || $words[2] == completion ) && $CURRENT == 3 ) ]]; then
    compadd -- ${=opts}
  else
    _files
  fi
}
if (( $+functions[compdef] )); then
  compdef _fsguard fsguard
else
  _fsguard "$@"
fi
`, strings.Join(names, " "), valueCases.String(), cases.String())
	return 0
}

// fish writes the fish completion: one `complete` line per subcommand,
// flag and set of flag values.
func fish(w io.Writer, names []string) {
	fmt.Fprintf(w, "# fish completion for fsguard\ncomplete -c fsguard -f -n __fish_use_subcommand -a %q\n", strings.Join(names, " "))
	for _, c := range commands {
		cond := "__fish_seen_subcommand_from " + c.name
		for _, f := range strings.Fields(flagsOf[c.name]) {
			if !strings.HasPrefix(f, "-") {
				fmt.Fprintf(w, "complete -c fsguard -f -n %q -a %s\n", cond+"; and not __fish_seen_subcommand_from "+f, f)
				continue
			}
			name := strings.TrimLeft(f, "-")
			opt := "-l " + name
			if len(name) == 1 {
				opt = "-s " + name
			}
			if v := values(c.name, name); v != "" {
				fmt.Fprintf(w, "complete -c fsguard -n %q %s -x -a %q\n", cond, opt, v)
			} else {
				fmt.Fprintf(w, "complete -c fsguard -n %q %s\n", cond, opt)
			}
		}
	}
}
