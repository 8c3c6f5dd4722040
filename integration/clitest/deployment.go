package clitest

import (
	"slices"
	"strings"
)

// Deployment is the part of `pulumi stack export` a test reads: the
// resources in the state, in the state's order.
type Deployment struct {
	Resources []Resource `json:"resources"`
}

// Resource is one resource of the state, as `pulumi stack export` shows it.
type Resource struct {
	URN          string              `json:"urn"`
	Type         string              `json:"type"`
	ID           string              `json:"id"`
	Custom       bool                `json:"custom"`
	Parent       string              `json:"parent"`
	Provider     string              `json:"provider"`
	Protect      bool                `json:"protect"`
	Dependencies []string            `json:"dependencies"`
	Inputs       map[string]any      `json:"inputs"`
	Outputs      map[string]any      `json:"outputs"`
	Hooks        map[string][]string `json:"resourceHooks"` // e.g. "BeforeCreate": ["audit"]
}

// Name is the resource's name, the last part of its URN.
func (r *Resource) Name() string {
	return r.URN[strings.LastIndex(r.URN, "::")+2:]
}

// Get returns the resource of type typ named name, or nil.
func (d *Deployment) Get(typ, name string) *Resource {
	for i := range d.Resources {
		if r := &d.Resources[i]; r.Type == typ && r.Name() == name {
			return r
		}
	}
	return nil
}

// Names lists "type::name" of every resource, in the state's order; it says
// what the state holds in a failure message.
func (d *Deployment) Names() []string {
	var names []string
	for _, r := range d.Resources {
		names = append(names, r.Type+"::"+r.Name())
	}
	return names
}

// OfType returns the names of the resources of type typ, sorted.
func (d *Deployment) OfType(typ string) []string {
	var names []string
	for _, r := range d.Resources {
		if r.Type == typ {
			names = append(names, r.Name())
		}
	}
	slices.Sort(names)
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
