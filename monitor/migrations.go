package monitor

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/langhost/callbacks"
)

// ErrCallFromMigration is wrapped by the error of a call to the engine made
// with the context of a state migration (FailedPrecondition). The engine
// stops running steps while a registration's migrations run and waits for
// them, so such a call would never be answered: a migration may only
// rewrite the state it is given.
var ErrCallFromMigration = errors.New("monitor: call to the engine from inside a state migration")

// refuseInsideMigration fails at once a call made with the context of a
// state migration, rather than leave it waiting on the paused engine.
func refuseInsideMigration(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption,
) error {
	if info, ok := callbacks.CallInfoFrom(ctx); ok && info.Kind == callbacks.KindStateMigration {
		what := "state migration"
		if info.Name != "" {
			what += fmt.Sprintf(" %q", info.Name)
		}
		if info.URN != "" {
			what += " for " + info.URN
		}
		return &callbacks.Error{
			Code: codes.FailedPrecondition, Kind: callbacks.KindStateMigration, Name: info.Name, Token: info.Token,
			Msg: fmt.Sprintf("monitor: %s called from inside %s: the engine waits for the migration before it "+
				"answers any call, so this one would never return; a migration may only rewrite the state it is given",
				method, what),
			Err: ErrCallFromMigration,
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}
