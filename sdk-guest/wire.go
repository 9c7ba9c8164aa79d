package sdk

import "github.com/llmgw/gateway/sdk-guest/internal/hostapi"

// The ABI's wire types, under the SDK's names so that a plugin's native tests can build what Run takes and read
// what it returns without importing anything but the SDK (its copy of hostapi is internal to its module). They
// are aliases: the same types as the gateway's hostapi.Input, hostapi.Output, hostapi.KV and hostapi.Kind have,
// field for field.
type (
	// WireInput is what the gateway sends to a plugin for one call (hostapi.Input): Run encodes it as the
	// gateway does.
	WireInput = hostapi.Input
	// WireOutput is what a plugin answers (hostapi.Output), as Run decodes it: Verdict, Data (JSON),
	// TransformedText with HasTransformedText, Error, Match.
	WireOutput = hostapi.Output
	// KV is one metadata entry or one parameter of a WireInput; a parameter's Value is its JSON text.
	KV = hostapi.KV
	// Kind says what a call asks of the plugin: KindCheck, KindCondition or KindTransform.
	Kind = hostapi.Kind
)

// Call kinds, for Run.
const (
	KindCheck     = hostapi.KindCheck
	KindCondition = hostapi.KindCondition
)
