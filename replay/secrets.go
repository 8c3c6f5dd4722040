package replay

// The signature key and value that mark a secret envelope, in property
// values ({sig: secretSig, "value": …}) and in checkpoint state
// ({sig: secretSig, "plaintext": "…"} or "ciphertext").
const (
	sigKey    = "4dabf18193072939515e22adb298388d"
	secretSig = "1b47061264138c4ac30d75fd1eb44270"
)

func isSecretEnvelope(m map[string]any) bool {
	s, ok := m[sigKey].(string)
	return ok && s == secretSig
}
