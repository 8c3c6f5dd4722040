package main

import (
	"encoding/json"
	"io"
	"time"
)

// jsonCall is one line of -json output. The field names are documented in
// the package comment and are kept stable.
type jsonCall struct {
	Source       string           `json:"source"`
	Seq          int              `json:"seq"`
	Line         int              `json:"line"`
	Kind         string           `json:"kind"`
	Registration jsonRegistration `json:"registration"`
	Resource     *jsonResource    `json:"resource,omitempty"`
	Invoke       string           `json:"invoke,omitempty"`
	Outcome      string           `json:"outcome"`
	Start        *time.Time       `json:"start,omitempty"`
	DurationNs   *int64           `json:"durationNs,omitempty"`
	Changes      []change         `json:"changes,omitempty"`
	Message      string           `json:"message,omitempty"`
	Attempt      int              `json:"attempt,omitempty"`
	Operation    string           `json:"operation,omitempty"`
	Error        string           `json:"error,omitempty"`
	Given        string           `json:"given,omitempty"`
	Note         string           `json:"note,omitempty"`
}

type jsonRegistration struct {
	Label  string `json:"label"`
	Method string `json:"method,omitempty"`
	Name   string `json:"name,omitempty"`
}

type jsonResource struct {
	URN  string `json:"urn,omitempty"` // "" when the log does not give it
	Type string `json:"type,omitempty"`
	Name string `json:"name,omitempty"`
}

// jsonProblem is the line written for each log line that could not be read.
type jsonProblem struct {
	Unreadable problem `json:"unreadable"`
}

func toJSON(from origin, r *record) jsonCall {
	j := jsonCall{
		Source: from.Key, Note: r.Note, Given: r.Given,
		Seq: r.Seq, Line: r.Line, Kind: r.Kind,
		Registration: jsonRegistration{Label: r.Registration, Method: r.Method, Name: r.HookName},
		Invoke:       r.Invoke, Outcome: r.Outcome,
		Changes: r.Changes, Message: r.Message, Attempt: r.Attempt, Operation: r.Op, Error: r.Err,
	}
	if r.URN != "" || r.Type != "" || r.Name != "" {
		j.Resource = &jsonResource{URN: r.URN, Type: r.Type, Name: r.Name}
	}
	if !r.NoDuration {
		d := int64(r.Duration)
		j.DurationNs = &d
	}
	if !r.Start.IsZero() {
		t := r.Start.UTC()
		j.Start = &t
	}
	return j
}

// writeJSON writes one JSON object per call, in the order the calls
// completed, then one per unreadable line.
func writeJSON(w io.Writer, from origin, recs []*record, problems []problem) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		if err := enc.Encode(toJSON(from, r)); err != nil {
			return err
		}
	}
	for _, p := range problems {
		if err := enc.Encode(jsonProblem{p}); err != nil {
			return err
		}
	}
	return nil
}
