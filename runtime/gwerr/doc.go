// Package gwerr holds the gateway's one error type, Error, with its HTTP status, stable code, message and the
// offending parameter. It is a leaf package: it imports only the standard library, so every other package of the
// gateway (routes, runtime, providers, guardrails, plugins) can create errors where the fact is known. Only
// routes turns an Error into an HTTP answer. It also owns the one JSON envelope of error answers, Body
// ({"error": {message, type, code, param, provider_error}}), which routes, the provider adapters' translated
// errors, stream error events and 446 answers all write.
package gwerr
