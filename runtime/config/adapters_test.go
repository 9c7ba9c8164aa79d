package config

// The shipped adapters, registered as the gateway binary registers them: provider identifiers and fields are
// theirs (runtime/providers' registry), so validation knows only what is linked in.
import (
	_ "github.com/llmgw/gateway/runtime/providers/anthropic"
	_ "github.com/llmgw/gateway/runtime/providers/azure"
	_ "github.com/llmgw/gateway/runtime/providers/bedrock"
	_ "github.com/llmgw/gateway/runtime/providers/google"
	_ "github.com/llmgw/gateway/runtime/providers/openai"
	_ "github.com/llmgw/gateway/runtime/providers/vertex"
)
