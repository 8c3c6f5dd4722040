package enginetest

import (
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// featureIDs maps the SupportsFeature ids the engine answers true for to
// their ResourceMonitorFeature values, in the order GetDeploymentInfo lists
// them.
var featureIDs = []struct {
	id      string
	feature pulumirpc.ResourceMonitorFeature
}{
	{"secrets", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_SECRETS},
	{"resourceReferences", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_RESOURCE_REFERENCES},
	{"outputValues", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_OUTPUT_VALUES},
	{"aliasSpecs", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_ALIAS_SPECS},
	{"replacementTrigger", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_REPLACEMENT_TRIGGER},
	{"deletedWith", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_DELETED_WITH},
	{"replaceWith", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_REPLACE_WITH},
	{"transforms", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_TRANSFORMS},
	{"invokeTransforms", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_INVOKE_TRANSFORMS},
	{"parameterization", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_PARAMETERIZATION},
	{"resourceHooks", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_RESOURCE_HOOKS},
	{"errorHooks", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_ERROR_HOOKS},
	{"sendsOptionsToHooks", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_SENDS_OPTIONS_TO_HOOKS},
}

// enumOnlyFeatures are always advertised by GetDeploymentInfo but have no
// SupportsFeature id; WithoutFeatures knows them by these names.
var enumOnlyFeatures = []struct {
	id      string
	feature pulumirpc.ResourceMonitorFeature
}{
	{"byteString", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_BYTE_STRING},
	{"invokeDependsOn", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_INVOKE_DEPENDS_ON},
	{"invokeParent", pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_INVOKE_PARENT},
}

// supports reports whether the feature with the given id is on.
func (c *config) supports(id string) bool {
	if c.disabled[id] {
		return false
	}
	for _, f := range featureIDs {
		if f.id == id {
			return true
		}
	}
	return false
}

// features lists the advertised features.
func (c *config) features() []pulumirpc.ResourceMonitorFeature {
	var out []pulumirpc.ResourceMonitorFeature
	for _, f := range featureIDs {
		if !c.disabled[f.id] {
			out = append(out, f.feature)
		}
	}
	for _, f := range enumOnlyFeatures {
		if !c.disabled[f.id] {
			out = append(out, f.feature)
		}
	}
	if c.runsMigrations() {
		out = append(out, pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_STATE_MIGRATIONS)
	}
	return out
}
