package enginetest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

type defaultProvider struct {
	done chan struct{}
	ref  string
	err  error
}

// defaultProvider returns the reference of the default provider for a
// package, registering it on first use.
func (e *Engine) defaultProvider(pkg, version string) (string, error) {
	name := "default"
	if version != "" {
		name += "_" + strings.NewReplacer(".", "_", "-", "_", "+", "_").Replace(version)
	}
	typ := providerTypePrefix + pkg
	urn := e.URN("", typ, name)
	e.mu.Lock()
	dp := e.defaults[urn]
	if dp != nil {
		e.mu.Unlock()
		<-dp.done
		return dp.ref, dp.err
	}
	dp = &defaultProvider{done: make(chan struct{})}
	e.defaults[urn] = dp
	e.mu.Unlock()
	defer close(dp.done)

	if dp.err = e.reserve(urn); dp.err != nil {
		return "", dp.err
	}
	inputs := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	if version != "" {
		inputs.Fields["version"] = structpb.NewStringValue(version)
	}
	ns := &ResourceState{URN: urn, Type: typ, Name: name, Custom: true, Inputs: inputs}
	st, err := e.runRegistrationStep(ns)
	if err != nil {
		dp.err = err
		return "", err
	}
	dp.ref = providerReference(urn, st.ID)
	return dp.ref, nil
}

// providerID makes a stable, UUID-shaped ID for a provider resource.
func providerID(urn string, preview bool) string {
	if preview {
		return unknownSentinel
	}
	sum := sha256.Sum256([]byte(urn))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
