package hooks_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/transforms"
)

func TestAddHooks(t *testing.T) {
	t.Parallel()
	names := func(ns ...string) []transforms.HookRef {
		out := make([]transforms.HookRef, len(ns))
		for i, n := range ns {
			out[i] = transforms.HookName(n)
		}
		return out
	}
	var nilOpts *transforms.ResourceOptions
	assert.False(t, hooks.AddHooks(nilOpts, &transforms.HooksBinding{BeforeCreate: names("a")}))
	assert.False(t, hooks.AddHooks(&transforms.ResourceOptions{}, nil))
	assert.False(t, hooks.AddHooks(&transforms.ResourceOptions{}, &transforms.HooksBinding{}))

	backing := names("a", "untouched")
	o := &transforms.ResourceOptions{Hooks: &transforms.HooksBinding{BeforeCreate: backing[:1]}}
	require.True(t, hooks.AddHooks(o, &transforms.HooksBinding{BeforeCreate: names("b"), OnError: names("e")}))
	assert.Equal(t, map[string][]string{"BeforeCreate": {"a", "b"}, "OnError": {"e"}}, hooks.BindingNames(o.Hooks))
	assert.Equal(t, names("a", "untouched"), backing, "a slice shared with the request is never written")
	assert.False(t, hooks.AddHooks(o, &transforms.HooksBinding{BeforeCreate: names("a", "b")}), "binding twice changes nothing")
}

func TestBindingValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		b       *transforms.HooksBinding
		wantErr []string
	}{
		{"nil", nil, nil},
		{"names", &transforms.HooksBinding{BeforeCreate: []transforms.HookRef{transforms.HookName("a")}, OnError: []transforms.HookRef{transforms.HookName("b")}}, nil},
		{"empty-name", &transforms.HooksBinding{AfterDelete: []transforms.HookRef{transforms.HookName("")}}, []string{"AfterDelete[0]", "no name"}},
		{"nil-ref", &transforms.HooksBinding{BeforeUpdate: []transforms.HookRef{transforms.HookName("a"), nil}}, []string{"BeforeUpdate[1]", "no name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := hooks.Validate(tt.b)
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
