// Package engine is the engine simulator behind package enginetest: the
// ResourceMonitor and Engine services, the calls to the program's callback
// servers, the steps against a provider, and the record of the deployment.
//
// Package enginetest documents what it does and maps its files; a test
// uses enginetest, which names what a test calls. This package's own tests
// exercise the rest.
package engine
