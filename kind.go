package callbacks

import "fmt"

// Kind says which request and response messages a callback's payload holds.
// It decides how the payload is decoded, labels errors, logs and observer
// events, and selects the default deadline set with [KindTimeout].
type Kind uint8

// The callback kinds the Pulumi engine knows, plus [KindRaw] for callers that
// bring their own messages.
const (
	// KindResourceTransform takes a pulumirpc.TransformRequest and returns a
	// pulumirpc.TransformResponse.
	KindResourceTransform Kind = iota + 1
	// KindInvokeTransform takes a pulumirpc.TransformInvokeRequest and returns
	// a pulumirpc.TransformInvokeResponse.
	KindInvokeTransform
	// KindResourceHook takes a pulumirpc.ResourceHookRequest and returns a
	// pulumirpc.ResourceHookResponse.
	KindResourceHook
	// KindErrorHook takes a pulumirpc.ErrorHookRequest and returns a
	// pulumirpc.ErrorHookResponse.
	KindErrorHook
	// KindStateMigration takes a pulumirpc.StateMigrationRequest and returns a
	// pulumirpc.StateMigrationResponse.
	KindStateMigration
	// KindRaw passes the payload bytes through untouched in both directions.
	KindRaw

	kindCount = int(KindRaw) + 1
)

var kindNames = [kindCount]string{
	KindResourceTransform: "resource transform",
	KindInvokeTransform:   "invoke transform",
	KindResourceHook:      "resource hook",
	KindErrorHook:         "error hook",
	KindStateMigration:    "state migration",
	KindRaw:               "raw callback",
}

// String returns a lower-case human name such as "resource transform".
func (k Kind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

func (k Kind) valid() bool { return k >= KindResourceTransform && k <= KindRaw }
