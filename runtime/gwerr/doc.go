// Package gwerr holds the gateway's one error type, Error, with its HTTP status, stable code, message and the
// offending parameter. It is a leaf package: it imports only the standard library, so every other package of the
// gateway (routes, runtime, providers, guardrails, plugins) can create errors where the fact is known. Only
// routes turns an Error into an HTTP answer.
package gwerr
