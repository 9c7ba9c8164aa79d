// Package prompt compiles and renders prompt templates: the stored versions of storage's Prompt.
//
// A template version is a JSON object: "messages" (the chat messages, whose string contents — and the "text"
// of text parts — are Mustache templates), the target ("provider": "@slug" or a provider identifier,
// "virtual_key", or "config": a saved config ID; at most one), "model", and any chat hyperparameters
// (temperature, tools, tool_choice, response_format, thinking, stop, seed, ...), passed on as they are.
//
// Rendering substitutes the caller's variables without HTML escaping (a prompt is not a web page: "<", "&"
// and quotes stay as they are); a missing variable renders empty; sections, inverted sections and lists follow
// Mustache (github.com/cbroglie/mustache). Numbers in variables render as they were written. The result is a
// chat completion body that can be posted as it is: the template's hyperparameters, overridden key by key by
// the caller's root-level ones, and the rendered messages; the target fields are not part of it.
//
// A version is compiled once: Cache keeps compiled templates by the hash of their JSON, so an edit (a new
// version) compiles anew and an unchanged one never does. Rendering writes the body by hand into one buffer.
//
// Version selection (Ref, Select): "id" is the published version, "id@latest" the newest, "id@<n>" version n.
package prompt
