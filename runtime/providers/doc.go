// Package providers holds what every provider adapter shares: the table of provider identifiers and their
// aliases (llmvendor = openai, cloudx = azure-openai, cloudy = vertex-ai, cloudz = bedrock). The Provider contract
// and the adapter registry join it with the routing engine; adapters live in subpackages, one per provider
// family, and import only the runtime's shared types.
package providers
