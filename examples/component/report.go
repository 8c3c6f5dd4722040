package main

// What the simulated run prints: aligned tables of what the engine did, and
// the verdict.

import (
	"fmt"
	"io"
	"strings"
)

// table prints rows indented, with columns aligned and no trailing blanks.
func table(w io.Writer, rows [][]string) {
	var width []int
	for _, row := range rows {
		for i, cell := range row[:max(len(row)-1, 0)] { // a last cell needs no padding
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len(cell))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, cell := range row {
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-len(cell)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// verdict prints the problems found, if any, under "<name>: FAILED" and
// returns an error that counts them; with no problems it prints nothing and
// returns nil.
func verdict(w io.Writer, name string, problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s: FAILED\n", name)
	for _, p := range problems {
		fmt.Fprintln(w, "  -", p)
	}
	return fmt.Errorf("%d expectation(s) not met", len(problems))
}
