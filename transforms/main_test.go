package transforms_test

import (
	"context"
	"testing"

	"github.com/langhost/callbacks/internal/testkit/leakcheck"
	"github.com/langhost/callbacks/transforms"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The SDK's plugin package starts glog's flush daemon at init.
	leakcheck.Main(m, goleak.IgnoreAnyFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}

func identity(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
	return a.Result(), nil
}

const (
	stackURN  = "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev"
	parentURN = "urn:pulumi:dev::proj::my:mod:Comp::parent"
)
