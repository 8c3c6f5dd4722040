package main

// What the simulated run prints: aligned tables of what the engine did, and
// the verdict.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
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

// printRecord prints the engine's record as a table, one row per event that
// describe renders (it returns nil for the others), leaving out the stack's
// own events.
func printRecord(w io.Writer, engine *enginetest.Engine, describe func(enginetest.Event) []string) {
	stack := engine.StackURN()
	var rows [][]string
	for _, ev := range engine.Events() {
		if ev.URN == stack {
			continue
		}
		if row := describe(ev); row != nil {
			rows = append(rows, row)
		}
	}
	table(w, rows)
}

// describeCommon renders the events the examples all report alike as a table row:
// steps, resource transform calls, hook calls, provider creates and the
// program's signal. It returns nil for any other event.
func describeCommon(ev enginetest.Event, calls *callLog) []string {
	who := enginetest.URNName(ev.URN)
	switch ev.Kind {
	case enginetest.KindStep:
		if typ := enginetest.QualifiedType(ev.URN); strings.HasPrefix(typ, "pulumi:providers:") {
			who = "provider " + strings.TrimPrefix(typ, "pulumi:providers:") + " (" + who + ")"
		}
		return []string{"step " + ev.Op, who}
	case enginetest.KindCallback:
		return []string{"transform " + calls.Name(ev.Token), who, outcome(ev)}
	case enginetest.KindHook:
		return []string{fmt.Sprintf("hook %s %q", ev.Point, ev.Name), who, outcome(ev)}
	case "ProviderCreate":
		return []string{"provider create", who, outcome(ev)}
	case "SignalAndWaitForShutdown":
		return []string{"program signals it is done", "", "the engine runs what is left"}
	}
	return nil
}

// outcome is how an event ended: its error, or else its detail.
func outcome(ev enginetest.Event) string {
	if ev.Err != "" {
		return "error: " + ev.Err
	}
	return ev.Detail
}

// callLog is a callbacks.Observer that counts the calls the servers answered
// and remembers the registration name behind each token. Its zero value is
// ready to use.
type callLog struct {
	mu    sync.Mutex
	names map[string]string // token -> registration name
	total int
	fails []string
}

// CallStarted implements callbacks.Observer.
func (l *callLog) CallStarted(context.Context, callbacks.CallInfo) {}

// CallFinished implements callbacks.Observer.
func (l *callLog) CallFinished(_ context.Context, info callbacks.CallInfo, code codes.Code, _ time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.names == nil {
		l.names = map[string]string{}
	}
	l.total++
	l.names[info.Token] = info.Name
	if code != codes.OK {
		l.fails = append(l.fails, fmt.Sprintf("%s %q failed with %s", info.Kind, info.Name, code))
	}
}

// Count returns how many calls were answered.
func (l *callLog) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Name returns the quoted registration name behind token, or "(never
// called)" for a token no call used.
func (l *callLog) Name(token string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.names[token]; ok {
		return fmt.Sprintf("%q", n)
	}
	return "(never called)"
}

// Fails describes the calls that did not succeed.
func (l *callLog) Fails() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.fails...)
}
