package main

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// defaultWidth is the width text is wrapped to when neither the terminal
// nor $COLUMNS gives one: a file or a pipe is read in a pager or an
// editor of about that width.
const defaultWidth = 100

// textWidth returns the width to wrap text written to w at: the
// terminal's when w is one, else $COLUMNS, else defaultWidth.
func textWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return defaultWidth
}

// wrapText wraps every line of text longer than width at blanks, each
// continuation indented four columns more than its line, so that a
// sentence of a thousand characters reads as a paragraph. A word longer
// than the room stays whole. width <= 0 leaves text as it is.
func wrapText(text []byte, width int) []byte {
	if width <= 0 {
		return text
	}
	var out bytes.Buffer
	lines := strings.SplitAfter(string(text), "\n")
	for _, l := range lines {
		body := strings.TrimSuffix(l, "\n")
		nl := len(body) < len(l)
		if len([]rune(body)) <= width {
			out.WriteString(l)
			continue
		}
		indent := len(body) - len(strings.TrimLeft(body, " "))
		hang := strings.Repeat(" ", min(indent+4, width/2))
		col := 0
		for i, word := range strings.Fields(body) {
			n := len([]rune(word))
			switch {
			case i == 0:
				out.WriteString(strings.Repeat(" ", indent))
				col = indent
			case col+1+n > width:
				out.WriteString("\n" + hang)
				col = len(hang)
			default:
				out.WriteByte(' ')
				col++
			}
			out.WriteString(word)
			col += n
		}
		if nl {
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}
