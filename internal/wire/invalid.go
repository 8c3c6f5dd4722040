package wire

import (
	"fmt"
	"reflect"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// InvalidValueError is a property value that holds a Go value no property
// value may hold, such as resource.PropertyValue{V: 3}: the protocol has no
// form for it, so it cannot be sent.
type InvalidValueError struct {
	Key   string // the property that holds it
	Value any    // what it holds
}

func (e *InvalidValueError) Error() string {
	use := "build values with resource.NewProperty, or resource.NewPropertyValue for plain Go values"
	switch reflect.ValueOf(e.Value).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32:
		use = fmt.Sprintf("a number is a float64: resource.NewProperty(float64(%v)) or resource.NewNumberProperty(%v)", e.Value, e.Value)
	}
	return fmt.Sprintf("the value of property %q is %v (type %T), which a property value cannot hold: %s", e.Key, e.Value, e.Value, use)
}

// checkValues returns an [*InvalidValueError] for the first value in m, at
// any depth, that the protocol has no form for.
func checkValues(m resource.PropertyMap) error {
	for k, v := range m {
		if err := checkValue(string(k), v); err != nil {
			return err
		}
	}
	return nil
}

func checkValue(key string, v resource.PropertyValue) error {
	switch x := v.V.(type) {
	case nil, bool, float64, string, *resource.Asset, *resource.Archive, resource.Computed:
		// An unknown sends no value, only a sentinel.
		return nil
	case []resource.PropertyValue:
		for _, e := range x {
			if err := checkValue(key, e); err != nil {
				return err
			}
		}
	case resource.PropertyMap:
		return checkValues(x)
	case *resource.Secret:
		return checkValue(key, x.Element)
	case resource.Output:
		return checkValue(key, x.Element)
	case resource.ResourceReference:
		return checkValue(key, x.ID)
	default:
		return &InvalidValueError{Key: key, Value: v.V}
	}
	return nil
}
