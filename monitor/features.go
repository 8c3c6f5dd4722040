package monitor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Feature is a capability the engine advertises.
type Feature = pulumirpc.ResourceMonitorFeature

// The features callback registration depends on.
const (
	Transforms          = pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_TRANSFORMS
	InvokeTransforms    = pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_INVOKE_TRANSFORMS
	ResourceHooks       = pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_RESOURCE_HOOKS
	ErrorHooks          = pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_ERROR_HOOKS
	SendsOptionsToHooks = pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_SENDS_OPTIONS_TO_HOOKS
	StateMigrations     = pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_STATE_MIGRATIONS
)

// ErrMissingFeature is wrapped by the error [Monitor.Require] returns when
// the engine lacks a feature.
var ErrMissingFeature = errors.New("monitor: the engine lacks a required feature")

// legacyIDs are the SupportsFeature ids of engines that predate
// GetDeploymentInfo. A feature without one is unsupported there.
var legacyIDs = map[Feature]string{
	pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_SECRETS:             "secrets",
	pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_RESOURCE_REFERENCES: "resourceReferences",
	pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_OUTPUT_VALUES:       "outputValues",
	pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_ALIAS_SPECS:         "aliasSpecs",
	pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_REPLACEMENT_TRIGGER: "replacementTrigger",
	pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_DELETED_WITH:        "deletedWith",
	pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_REPLACE_WITH:        "replaceWith",
	Transforms:       "transforms",
	InvokeTransforms: "invokeTransforms",
	pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_PARAMETERIZATION: "parameterization",
	ResourceHooks:       "resourceHooks",
	ErrorHooks:          "errorHooks",
	SendsOptionsToHooks: "sendsOptionsToHooks",
}

// DeploymentInfo returns the engine's answer to GetDeploymentInfo, asked once
// and cached (a failed call is not cached): among others, whether the
// deployment is a preview (GetDryRun). Engines that predate the call answer
// UNIMPLEMENTED; then it returns nil and no error, and the getters of the
// nil answer report false and "".
func (m *Monitor) DeploymentInfo(ctx context.Context) (*pulumirpc.DeploymentInfo, error) {
	m.infoMu.Lock()
	defer m.infoMu.Unlock()
	if m.infoKnown {
		return m.info, nil
	}
	info, err := m.client.GetDeploymentInfo(ctx, &emptypb.Empty{})
	switch {
	case status.Code(err) == codes.Unimplemented:
		info = nil
	case err != nil:
		return nil, fmt.Errorf("monitor: GetDeploymentInfo: %w", err)
	}
	m.info, m.infoKnown = info, true
	return info, nil
}

// Supports reports whether the engine has feature f: from GetDeploymentInfo
// where the engine has it, else from SupportsFeature with the feature's
// legacy id (false for features that have none).
func (m *Monitor) Supports(ctx context.Context, f Feature) (bool, error) {
	info, err := m.DeploymentInfo(ctx)
	if err != nil {
		return false, err
	}
	if info != nil {
		return slices.Contains(info.GetSupportedFeatures(), f), nil
	}
	id, ok := legacyIDs[f]
	if !ok {
		return false, nil
	}
	m.legacyMu.Lock()
	known, cached := m.legacy[id]
	m.legacyMu.Unlock()
	if cached {
		return known, nil
	}
	res, err := m.client.SupportsFeature(ctx, &pulumirpc.SupportsFeatureRequest{Id: id})
	if err != nil {
		return false, fmt.Errorf("monitor: SupportsFeature(%q): %w", id, err)
	}
	m.legacyMu.Lock()
	if m.legacy == nil {
		m.legacy = make(map[string]bool)
	}
	m.legacy[id] = res.GetHasSupport()
	m.legacyMu.Unlock()
	return res.GetHasSupport(), nil
}

// Require returns nil if the engine has every feature in fs, and otherwise an
// error wrapping [ErrMissingFeature] that names the missing ones, so that
// nothing is registered with an engine that would mishandle it.
func (m *Monitor) Require(ctx context.Context, fs ...Feature) error {
	var missing []string
	for _, f := range fs {
		ok, err := m.Supports(ctx, f)
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, featureName(f))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: the engine does not support %s; upgrade the Pulumi CLI",
		ErrMissingFeature, strings.Join(missing, ", "))
}

// featureName returns a readable name such as "resource hooks (RESOURCE_HOOKS)".
func featureName(f Feature) string {
	short := strings.TrimPrefix(f.String(), "RESOURCE_MONITOR_FEATURE_")
	return fmt.Sprintf("%s (%s)", strings.ToLower(strings.ReplaceAll(short, "_", " ")), short)
}
