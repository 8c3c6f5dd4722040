package hooks

import (
	"fmt"

	"github.com/langhost/callbacks/internal/props"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"
)

// Args is what a resource hook is told about the resource it runs for.
//
// Which fields are set depends on the point the hook is bound at:
//
//	point          ID      NewInputs OldInputs NewOutputs OldOutputs NewOptions OldOptions
//	BeforeCreate   ""      yes       -         -          -          yes        -
//	AfterCreate    yes(1)  yes       -         yes        -          yes        -
//	BeforeUpdate   old ID  yes       yes       -          yes        yes        yes
//	AfterUpdate    yes     yes       yes       yes        yes        yes        yes
//	BeforeDelete   old ID  -         yes       -          yes        -          yes
//	AfterDelete    old ID  -         yes       -          yes        -          yes
//
// (1) "" in a preview, where outputs may also be unknown. The options are
// nil on engines without the SENDS_OPTIONS_TO_HOOKS feature (see
// [Hook.ReceivesOptions]).
//
// Property values arrive exactly as the engine sent them: secrets are
// [resource.Secret] values rather than JSON envelopes, unknowns are
// [resource.Computed], resource references and output values (with their
// dependencies) keep their kind, and binary strings keep their bytes. A map
// is nil when the request did not carry it.
type Args struct {
	// URN is the resource's URN.
	URN resource.URN
	// ID is the resource's provider ID; see the table for when it is set.
	ID resource.ID
	// Name is the resource's name.
	Name string
	// Type is the type token, such as "aws:s3/bucket:Bucket".
	Type string

	// NewInputs are the inputs of this deployment.
	NewInputs resource.PropertyMap
	// OldInputs are the inputs recorded in the state.
	OldInputs resource.PropertyMap
	// NewOutputs are the outputs the provider just returned.
	NewOutputs resource.PropertyMap
	// OldOutputs are the outputs recorded in the state.
	OldOutputs resource.PropertyMap

	// NewOptions are the resource's options in this deployment.
	NewOptions *ResourceOptions
	// OldOptions are the resource's options recorded in the state.
	OldOptions *ResourceOptions
}

// DecodeRequest decodes a hook request.
func DecodeRequest(req *pulumirpc.ResourceHookRequest) (*Args, error) {
	a := &Args{
		URN:  resource.URN(req.GetUrn()),
		ID:   resource.ID(req.GetId()),
		Name: req.GetName(),
		Type: req.GetType(),
	}
	var err error
	if err = decodeMaps(
		field{"new_inputs", req.GetNewInputs(), &a.NewInputs},
		field{"old_inputs", req.GetOldInputs(), &a.OldInputs},
		field{"new_outputs", req.GetNewOutputs(), &a.NewOutputs},
		field{"old_outputs", req.GetOldOutputs(), &a.OldOutputs},
	); err != nil {
		return nil, err
	}
	if a.NewOptions, err = OptionsFromProto(req.GetNewOptions()); err != nil {
		return nil, fmt.Errorf("new_options: %w", err)
	}
	if a.OldOptions, err = OptionsFromProto(req.GetOldOptions()); err != nil {
		return nil, fmt.Errorf("old_options: %w", err)
	}
	return a, nil
}

// ToProto encodes a as the request the engine would send. Binary strings are
// encoded as byte-string envelopes.
func (a *Args) ToProto() (*pulumirpc.ResourceHookRequest, error) {
	req := &pulumirpc.ResourceHookRequest{
		Urn: string(a.URN), Id: string(a.ID), Name: a.Name, Type: a.Type,
	}
	var err error
	if err = encodeMaps(
		wireField{"new_inputs", a.NewInputs, &req.NewInputs},
		wireField{"old_inputs", a.OldInputs, &req.OldInputs},
		wireField{"new_outputs", a.NewOutputs, &req.NewOutputs},
		wireField{"old_outputs", a.OldOutputs, &req.OldOutputs},
	); err != nil {
		return nil, err
	}
	if req.NewOptions, err = a.NewOptions.ToProto(); err != nil {
		return nil, fmt.Errorf("new_options: %w", err)
	}
	if req.OldOptions, err = a.OldOptions.ToProto(); err != nil {
		return nil, fmt.Errorf("old_options: %w", err)
	}
	return req, nil
}

// Operation is the provider operation an error hook runs after.
type Operation string

// The operations whose failure runs error hooks. The engine runs them for
// create, update and delete; the protocol also names read.
const (
	OperationCreate Operation = "create"
	OperationUpdate Operation = "update"
	OperationDelete Operation = "delete"
	OperationRead   Operation = "read"
)

// ErrorArgs is what an error hook is told when the provider fails to create,
// update or delete a resource. The engine calls error hooks only for custom
// resources, never in a preview.
//
// Create failures carry NewInputs and NewOptions; update failures carry both
// inputs, OldOutputs and both option sets; delete failures carry OldInputs,
// OldOutputs and OldOptions. Property values are kept as in [Args].
type ErrorArgs struct {
	// URN is the resource's URN.
	URN resource.URN
	// ID is the resource's provider ID, empty for a failed create.
	ID resource.ID
	// Name is the resource's name.
	Name string
	// Type is the type token, such as "aws:s3/bucket:Bucket".
	Type string

	// FailedOperation is the provider operation that failed.
	FailedOperation Operation
	// Errors holds every failure message of this step so far, newest first.
	Errors []string

	// NewInputs are the inputs of this deployment (create, update).
	NewInputs resource.PropertyMap
	// OldInputs are the inputs recorded in the state (update, delete).
	OldInputs resource.PropertyMap
	// OldOutputs are the outputs recorded in the state (update, delete).
	OldOutputs resource.PropertyMap

	// NewOptions are the resource's options in this deployment.
	NewOptions *ResourceOptions
	// OldOptions are the resource's options recorded in the state.
	OldOptions *ResourceOptions
}

// Attempt returns how many times the operation has failed so far: 1 on the
// first failure. The engine tries an operation at most 100 times.
func (a *ErrorArgs) Attempt() int { return len(a.Errors) }

// LastError returns the newest failure message, or "" if there is none.
func (a *ErrorArgs) LastError() string {
	if len(a.Errors) == 0 {
		return ""
	}
	return a.Errors[0]
}

// DecodeErrorRequest decodes an error hook request.
func DecodeErrorRequest(req *pulumirpc.ErrorHookRequest) (*ErrorArgs, error) {
	a := &ErrorArgs{
		URN:             resource.URN(req.GetUrn()),
		ID:              resource.ID(req.GetId()),
		Name:            req.GetName(),
		Type:            req.GetType(),
		FailedOperation: Operation(req.GetFailedOperation()),
		Errors:          cloneStrings(req.GetErrors()),
	}
	var err error
	if err = decodeMaps(
		field{"new_inputs", req.GetNewInputs(), &a.NewInputs},
		field{"old_inputs", req.GetOldInputs(), &a.OldInputs},
		field{"old_outputs", req.GetOldOutputs(), &a.OldOutputs},
	); err != nil {
		return nil, err
	}
	if a.NewOptions, err = OptionsFromProto(req.GetNewOptions()); err != nil {
		return nil, fmt.Errorf("new_options: %w", err)
	}
	if a.OldOptions, err = OptionsFromProto(req.GetOldOptions()); err != nil {
		return nil, fmt.Errorf("old_options: %w", err)
	}
	return a, nil
}

// ToProto encodes a as the request the engine would send. Binary strings are
// encoded as byte-string envelopes.
func (a *ErrorArgs) ToProto() (*pulumirpc.ErrorHookRequest, error) {
	req := &pulumirpc.ErrorHookRequest{
		Urn: string(a.URN), Id: string(a.ID), Name: a.Name, Type: a.Type,
		FailedOperation: string(a.FailedOperation), Errors: cloneStrings(a.Errors),
	}
	var err error
	if err = encodeMaps(
		wireField{"new_inputs", a.NewInputs, &req.NewInputs},
		wireField{"old_inputs", a.OldInputs, &req.OldInputs},
		wireField{"old_outputs", a.OldOutputs, &req.OldOutputs},
	); err != nil {
		return nil, err
	}
	if req.NewOptions, err = a.NewOptions.ToProto(); err != nil {
		return nil, fmt.Errorf("new_options: %w", err)
	}
	if req.OldOptions, err = a.OldOptions.ToProto(); err != nil {
		return nil, fmt.Errorf("old_options: %w", err)
	}
	return req, nil
}

type field struct {
	name string
	in   *structpb.Struct
	out  *resource.PropertyMap
}

func decodeMaps(fs ...field) error {
	for _, f := range fs {
		m, err := props.Unmarshal(f.in)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		*f.out = m
	}
	return nil
}

type wireField struct {
	name string
	in   resource.PropertyMap
	out  **structpb.Struct
}

// encodeMaps encodes each map, leaving nil maps absent so that "not sent"
// survives a round trip.
func encodeMaps(fs ...wireField) error {
	for _, f := range fs {
		if f.in == nil {
			continue
		}
		s, err := props.Marshal(f.in, true)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		*f.out = s
	}
	return nil
}
