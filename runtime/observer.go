package runtime

// Observer receives what the engine does that a request's answer does not show, for the gateway's metrics.
// Its methods are called on the request path: they must be cheap, must not block, and must be safe for
// concurrent use. Options.Observer nil observes nothing.
type Observer interface {
	// CircuitChanged reports a target's circuit breaker opening (open) or closing again. target names it as
	// "<provider> <option path>", e.g. "openai config.targets[1]".
	CircuitChanged(target string, open bool)
	// GuardrailVerdict reports one check's verdict on a hook: "pass", "fail", "deny" or "error".
	GuardrailVerdict(check, verdict string)
}
