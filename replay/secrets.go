package replay

import "github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"

// isSecretEnvelope reports whether m is a secret: a property value's
// envelope ({sig.Key: sig.Secret, "value": …}), a checkpoint state's
// ({sig.Key: sig.Secret, "plaintext" or "ciphertext": …}), or a secret
// output value ({sig.Key: sig.OutputValue, "secret": true, …}).
func isSecretEnvelope(m map[string]any) bool {
	switch m[sig.Key] {
	case sig.Secret:
		return true
	case sig.OutputValue:
		s, _ := m["secret"].(bool)
		return s
	}
	return false
}
