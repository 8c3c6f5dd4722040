package callbacks

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
)

// Observer is told about every invocation, so that metrics and traces can be
// fed to Prometheus, OpenTelemetry or anything else without this module
// depending on them. Set it with [WithObserver].
//
// CallStarted and CallFinished are called once each per invocation, from the
// goroutine serving it, and must be safe for concurrent use. CallFinished gets
// the info as it stood when the function returned (with the resource filled
// in where the request named one) and the gRPC code the engine receives. An
// invocation with an unknown or empty token is reported with a zero Kind.
type Observer interface {
	CallStarted(ctx context.Context, info CallInfo)
	CallFinished(ctx context.Context, info CallInfo, code codes.Code, elapsed time.Duration)
}
