package hooks_test

import (
	"testing"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/wiretest"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBindingProto(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		b    *hooks.Binding
		want *pulumirpc.RegisterResourceRequest_ResourceHooksBinding
	}{
		{"nil", nil, nil},
		{"empty", &hooks.Binding{}, &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{}},
		{
			"every-point",
			&hooks.Binding{
				BeforeCreate: []hooks.Ref{hooks.Name("bc")},
				AfterCreate:  []hooks.Ref{hooks.Name("ac1"), hooks.Name("ac2")},
				BeforeUpdate: []hooks.Ref{hooks.Name("bu")},
				AfterUpdate:  []hooks.Ref{hooks.Name("au")},
				BeforeDelete: []hooks.Ref{hooks.Name("bd")},
				AfterDelete:  []hooks.Ref{hooks.Name("ad")},
				OnError:      []hooks.Ref{hooks.Name("oe")},
			},
			&pulumirpc.RegisterResourceRequest_ResourceHooksBinding{
				BeforeCreate: []string{"bc"}, AfterCreate: []string{"ac1", "ac2"},
				BeforeUpdate: []string{"bu"}, AfterUpdate: []string{"au"},
				BeforeDelete: []string{"bd"}, AfterDelete: []string{"ad"},
				OnError: []string{"oe"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.b.ToProto()
			if tt.want == nil {
				assert.Nil(t, got)
				assert.Nil(t, hooks.BindingFromProto(nil))
				return
			}
			wiretest.RequireProtoEqual(t, tt.want, got)
			wiretest.RequireProtoEqual(t, tt.want, hooks.BindingFromProto(got).ToProto())
		})
	}
}

func TestBindingValidate(t *testing.T) {
	t.Parallel()
	var nilHook *hooks.Hook
	tests := []struct {
		name    string
		b       *hooks.Binding
		wantErr []string
	}{
		{"nil", nil, nil},
		{"names", &hooks.Binding{BeforeCreate: []hooks.Ref{hooks.Name("a")}, OnError: []hooks.Ref{hooks.Name("b")}}, nil},
		{"empty-name", &hooks.Binding{AfterDelete: []hooks.Ref{hooks.Name("")}}, []string{"AfterDelete[0]", "no name"}},
		{"nil-ref", &hooks.Binding{BeforeUpdate: []hooks.Ref{hooks.Name("a"), nil}}, []string{"BeforeUpdate[1]", "no name"}},
		{"nil-hook", &hooks.Binding{BeforeUpdate: []hooks.Ref{nilHook}}, []string{"BeforeUpdate[0]", "no name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.b.Validate()
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.wantErr {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
