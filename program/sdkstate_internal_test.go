package program

import (
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every access to the SDK's unexported state, given a struct of another
// shape than the SDK versions it was verified for, fails with an error
// that names the field and those versions, instead of reading or writing
// memory it does not know.
func TestSDKStateOfAnotherShape(t *testing.T) {
	type server struct {
		stop   chan struct{} // not a chan bool
		handle int
	}
	_ = server{}.stop
	_ = server{}.handle
	other := struct {
		info          string
		callbacksLock int
		callbacks     *server
	}{}
	state := reflect.ValueOf(&other).Elem()

	_, err := readRunInfo(state)
	assert.ErrorContains(t, err, "keeps no info pulumi.RunInfo in struct")
	assert.ErrorContains(t, err, sdkVerified)

	err = stopSDKServer(state)
	assert.ErrorContains(t, err, "keeps no callbacksLock sync.Mutex")

	hook := struct{ registered bool }{}
	err = markRegistered(reflect.ValueOf(&hook).Elem())
	assert.ErrorContains(t, err, "keeps no registered *promise.Promise[struct {}]")
	assert.False(t, hook.registered)

	shaped := struct {
		callbacksLock sync.Mutex
		callbacks     *server
	}{callbacks: &server{}}
	err = stopSDKServer(reflect.ValueOf(&shaped).Elem())
	assert.ErrorContains(t, err, "keeps no stop chan bool")
}
