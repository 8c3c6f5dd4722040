package main

import (
	"context"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/internal/testkit/leakcheck"
)

func TestMain(m *testing.M) {
	// The SDK's provider package links glog, whose flush daemon runs for
	// the life of the process.
	leakcheck.Main(m, goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}

// The environment chooses how Create fails: throttled once, with a given
// message every time, both, or never.
func TestCreateFailsAsTheEnvironmentSays(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string // per attempt: the message, or "" for success
	}{
		{"never", nil, []string{"", ""}},
		{"throttled once", map[string]string{ThrottleEnv: "1"}, []string{"throttled: too many requests for pet", ""}},
		{"a given message", map[string]string{FailEnv: "quota exceeded"}, []string{"quota exceeded", "quota exceeded"}},
		{"both", map[string]string{ThrottleEnv: "true", FailEnv: "quota exceeded"}, []string{"throttled", "quota exceeded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(func(k string) string { return tt.env[k] })
			req := &pulumirpc.CreateRequest{Urn: "urn:pulumi:s::p::" + PetType + "::pet", Type: PetType, Name: "pet", Properties: &structpb.Struct{}}
			for i, want := range tt.want {
				_, err := p.Create(context.Background(), req)
				switch {
				case want == "" && err != nil:
					t.Errorf("attempt %d: %v, want success", i+1, err)
				case want != "" && (status.Code(err) == codes.OK || !strings.Contains(status.Convert(err).Message(), want)):
					t.Errorf("attempt %d: %v, want %q", i+1, err, want)
				}
			}
		})
	}
}
