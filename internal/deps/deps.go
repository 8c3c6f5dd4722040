// Package deps pins the module's dependencies until the packages that use them exist.
package deps

import (
	_ "github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/goleak"
	_ "google.golang.org/grpc/test/bufconn"
)
