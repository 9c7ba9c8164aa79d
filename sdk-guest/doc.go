// Package sdk is the guest SDK: plugin authors write a check, hook or routing condition as a plain Go function
// and build it with GOOS=wasip1 GOARCH=wasm. It imports only hostapi, so a plugin never pulls in fiber, pebble or
// wazero.
//
// Empty until the plugin-runtime issue fills it.
package sdk
