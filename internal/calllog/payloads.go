package calllog

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks/internal/changes"
)

// This file writes a call's request and answer for a record, when the
// user asked for payloads (CALLBACKS_PULUMI_LOG=payloads): as plain JSON
// text, the protocol's JSON form of the message (property maps as Pulumi's
// property values, a migration's states as the JSON they hold), with the
// value of every secret replaced by "[secret]".

// Messages returns new request and answer messages of a kind as a record
// names it ("resource_transform"), or nil for a kind it does not know.
func Messages(kind string) (req, res proto.Message) {
	switch kind {
	case "resource_transform":
		return &pulumirpc.TransformRequest{}, &pulumirpc.TransformResponse{}
	case "invoke_transform":
		return &pulumirpc.TransformInvokeRequest{}, &pulumirpc.TransformInvokeResponse{}
	case "state_migration":
		return &pulumirpc.StateMigrationRequest{}, &pulumirpc.StateMigrationResponse{}
	case "resource_hook":
		return &pulumirpc.ResourceHookRequest{}, &pulumirpc.ResourceHookResponse{}
	case "error_hook":
		return &pulumirpc.ErrorHookRequest{}, &pulumirpc.ErrorHookResponse{}
	}
	return nil, nil
}

// stateFields are the JSON names of the fields that hold a migration's
// state: JSON in bytes, which the protocol's JSON form writes in base64.
var stateFields = []string{"oldState", "newState"}

// PayloadJSON returns the payload b, a call of kind's request (or, unless
// request, its answer), as JSON text with every secret's value replaced by
// "[secret]": a secret is {sig: secret, "value": "[secret]"}, whether it
// was a property value's secret, a checkpoint's or a known output value
// marked secret; an unknown output value marked secret is {sig: output,
// "secret": true}.
func PayloadJSON(kind string, request bool, b []byte) (string, error) {
	req, res := Messages(kind)
	m := res
	if request {
		m = req
	}
	if m == nil {
		return "", errors.New("no payload of this kind is known")
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return "", errors.New("the payload does not decode")
	}
	js, err := protojson.Marshal(m)
	if err != nil {
		return "", err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	for _, f := range stateFields {
		s, ok := v[f].(string)
		if !ok {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var state any
		if d.Decode(&state) != nil {
			delete(v, f) // bytes that hold no JSON may hold anything
			v[f+"Bytes"] = len(raw)
			continue
		}
		v[f] = state
	}
	out, err := json.Marshal(changes.Redact(v))
	if err != nil {
		return "", err
	}
	return string(out), nil
}
