package lines

import "strings"

// Block returns the smallest block by indentation that encloses line n
// (1-based) of lines: its header — the nearest line above with less
// indentation, or n itself when the lines after it are indented deeper
// (a function's first line) — through the last line indented deeper than
// the header, plus a closing line at the header's own indentation (a "}",
// "end", ")", "fi", "done", "esac" or closing tag). Comments and decorators
// directly above the header at its indentation belong to the block. Blank
// lines inside count as the block's; blank lines after it do not. A line
// that is blank, or at the top level with nothing deeper under it,
// encloses nothing smaller than the whole file: 1..len(lines).
func Block(lines []string, n int) (start, end int) {
	if n < 1 || n > len(lines) {
		return 0, 0
	}
	blank := func(i int) bool { return strings.TrimSpace(lines[i-1]) == "" }
	ind := func(i int) int { return indentOf(lines[i-1]) }
	at := n
	for at <= len(lines) && blank(at) {
		at++ // a blank line belongs to what follows it
	}
	if at > len(lines) {
		return 1, len(lines)
	}
	header := 0
	if next := nextNonBlank(lines, at); next > 0 && ind(next) > ind(at) {
		header = at // the line opens a block
	} else {
		for i := at - 1; i >= 1; i-- {
			if !blank(i) && ind(i) < ind(at) {
				header = i
				break
			}
		}
	}
	if header == 0 {
		return 1, len(lines)
	}
	h := ind(header)
	end = header
	for i := header + 1; i <= len(lines); i++ {
		if blank(i) {
			continue
		}
		if ind(i) > h {
			end = i
			continue
		}
		if ind(i) == h && closes(lines[i-1]) {
			end = i
		}
		break
	}
	start = header
	for start > 1 && !blank(start-1) && ind(start-1) == h && leads(lines[start-2]) {
		start--
	}
	return start, end
}

// indentOf is a line's indentation in columns, tabs to the next multiple
// of 8 (what a terminal shows).
func indentOf(s string) int {
	col := 0
	for _, c := range s {
		switch c {
		case ' ':
			col++
		case '\t':
			col = col/8*8 + 8
		default:
			return col
		}
	}
	return col
}

func nextNonBlank(lines []string, n int) int {
	for i := n + 1; i <= len(lines); i++ {
		if strings.TrimSpace(lines[i-1]) != "" {
			return i
		}
	}
	return 0
}

// closes: a line that ends a block at its header's indentation.
func closes(s string) bool {
	t := strings.TrimSpace(s)
	for _, p := range []string{"}", ")", "]", "end", "fi", "done", "esac", "</", "#endif", "%}"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// leads: a comment or decorator line that belongs to the block below it.
func leads(s string) bool {
	t := strings.TrimSpace(s)
	for _, p := range []string{"//", "#", "/*", "*", "@", "--", ";", "\"\"\""} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}
