// Package sdkrun runs a Go plugin's handlers natively, as sdk.Run does, for tests of the gateway's module that
// speak the gateway's hostapi types. The guest SDK (sdk-guest) is a module of its own with a generated copy of
// hostapi, so its Run takes sdk.WireInput (the copy's Input), a type distinct from hostapi.Input although field
// for field the same; Run here converts between the two by field name.
//
// It is test support: it imports hostapi, the SDK and the standard library, and nothing else of the gateway's.
//
// Example, in a plugin's main_test.go:
//
//	out := sdkrun.Run(hostapi.KindCheck, &hostapi.Input{Text: "a secret"})
package sdkrun
