package enginetest_test

import (
	"testing"

	"github.com/langhost/callbacks/internal/testkit/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
