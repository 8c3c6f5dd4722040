package transforms_test

import (
	"testing"

	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/transforms"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
)

func TestBindingProto(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		b    *transforms.HooksBinding
		want *pulumirpc.RegisterResourceRequest_ResourceHooksBinding
	}{
		{"nil", nil, nil},
		{"empty", &transforms.HooksBinding{}, &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{}},
		{
			"every-point",
			&transforms.HooksBinding{
				BeforeCreate: []transforms.HookRef{transforms.HookName("bc")},
				AfterCreate:  []transforms.HookRef{transforms.HookName("ac1"), transforms.HookName("ac2")},
				BeforeUpdate: []transforms.HookRef{transforms.HookName("bu")},
				AfterUpdate:  []transforms.HookRef{transforms.HookName("au")},
				BeforeDelete: []transforms.HookRef{transforms.HookName("bd")},
				AfterDelete:  []transforms.HookRef{transforms.HookName("ad")},
				OnError:      []transforms.HookRef{transforms.HookName("oe")},
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
				assert.Nil(t, transforms.HooksFromProto(nil))
				return
			}
			wiretest.RequireProtoEqual(t, tt.want, got)
			wiretest.RequireProtoEqual(t, tt.want, transforms.HooksFromProto(got).ToProto())
		})
	}
}
