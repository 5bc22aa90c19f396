package main

import (
	"fmt"
	"io"
	"strings"
)

// flagsOf lists each command's flags for completion.
var flagsOf = map[string]string{
	"read":    "--offset --limit --format --anchors --policy --session --no-dedupe --socket",
	"check":   "--policy --session --socket --format",
	"write":   "--policy --session --socket --id --format",
	"status":  "--policy --socket --format",
	"edit":    "--replace --insert-after --delete --text --old --new --policy --session --socket --format",
	"journal": "query tail stats verify export --session --path --since --until --kind --process --after --format -f --follow -n --jsonl --policy",
	"policy":  "check",
	"mount":   "--policy --allow-other --socket --session --debug",
	"unmount": "--lazy",
	"mcp":     "--policy --socket --session",
}

func runCompletion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh") {
		code := exitUsage
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
			code = 0
		}
		fmt.Fprint(stderr, `usage: fsguard completion bash|zsh

Prints a shell completion script.

examples:
  source <(fsguard completion bash)
  fsguard completion zsh > "${fpath[1]}/_fsguard"
`)
		return code
	}
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	var cases strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&cases, "    %s) opts=%q ;;\n", c.name, flagsOf[c.name])
	}
	if args[0] == "bash" {
		fmt.Fprintf(stdout, `# bash completion for fsguard
_fsguard() {
  local cur=${COMP_WORDS[COMP_CWORD]} opts
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W %q -- "$cur")); return
  fi
  case ${COMP_WORDS[1]} in
%s    *) opts="" ;;
  esac
  if [[ $cur == -* || ${COMP_WORDS[1]} == journal && $COMP_CWORD -eq 2 ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _fsguard fsguard
`, strings.Join(names, " "), cases.String())
		return 0
	}
	fmt.Fprintf(stdout, `#compdef fsguard
# zsh completion for fsguard
_fsguard() {
  local opts
  if (( CURRENT == 2 )); then
    compadd -- %s; return
  fi
  case $words[2] in
%s    *) opts="" ;;
  esac
  if [[ $words[CURRENT] == -* || ( $words[2] == journal && CURRENT == 3 ) ]]; then
    compadd -- ${=opts}
  else
    _files
  fi
}
_fsguard "$@"
`, strings.Join(names, " "), cases.String())
	return 0
}
