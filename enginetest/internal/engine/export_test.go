package engine

// WithAssetHash lets the external tests check the simulator's asset and
// archive hashing against the SDK's.
var WithAssetHash = withAssetHash
