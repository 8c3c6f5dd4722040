// Package secret holds the secret sdkprogram writes into a resource's
// inputs, for the test that checks callbacklog never prints it by default.
package secret

// Value is the secret.
const Value = "sdkprogram-secret-b7c1e9"
