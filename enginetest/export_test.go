package enginetest

// WithAssetHash lets the external tests check the simulator's asset and
// archive hashing against the SDK's.
var WithAssetHash = withAssetHash

// GeneratorWaiters is the number of registrations, outputs and reads
// waiting for the step generator.
func GeneratorWaiters(e *Engine) int { return e.gen.waiters() }

// MigrationsWaitingForSteps is the number of state migrations waiting for
// the steps in flight to end.
func MigrationsWaitingForSteps(e *Engine) int { return int(e.barrierWaits.Load()) }
