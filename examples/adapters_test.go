package examples

// The adapters the gateway binary ships: provider identifiers and fields belong to them (runtime/providers'
// registry), so the example bootstrap file validates only with them linked in, as in cmd/gateway.
import (
	_ "github.com/llmgw/gateway/runtime/providers/anthropic"
	_ "github.com/llmgw/gateway/runtime/providers/azure"
	_ "github.com/llmgw/gateway/runtime/providers/bedrock"
	_ "github.com/llmgw/gateway/runtime/providers/google"
	_ "github.com/llmgw/gateway/runtime/providers/openai"
	_ "github.com/llmgw/gateway/runtime/providers/vertex"
)
