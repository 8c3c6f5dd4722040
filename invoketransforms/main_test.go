package invoketransforms_test

import (
	"context"
	"testing"

	"github.com/langhost/callbacks/internal/testkit/leakcheck"
	"github.com/langhost/callbacks/invoketransforms"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The SDK's plugin package starts glog's flush daemon at init.
	leakcheck.Main(m, goleak.IgnoreAnyFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}

func identity(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
	return a.Result(), nil
}
