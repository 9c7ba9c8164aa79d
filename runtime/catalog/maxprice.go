package catalog

// MaxPrice is the dearest the default catalogue knows a model name to be, for a reservation made before the
// request is routed (a budget does not know yet which provider will answer): the highest input and output
// prices and the largest MaxOutputTokens that any provider's entry for the name (Lookup's exact or base match)
// lists. Provider and ID are left empty. ok is false when no provider prices the model; MaxOutputTokens may be
// set even then.
func MaxPrice(model string) (m Model, ok bool) { return Default().MaxPrice(model) }

// MaxPrice is the package-level MaxPrice over c.
func (c *Catalog) MaxPrice(model string) (m Model, ok bool) {
	for p := range c.providers {
		e, found := c.Lookup(p, model)
		if !found {
			continue
		}
		m.InputPerMTok = max(m.InputPerMTok, e.InputPerMTok)
		m.OutputPerMTok = max(m.OutputPerMTok, e.OutputPerMTok)
		m.MaxOutputTokens = max(m.MaxOutputTokens, e.MaxOutputTokens)
	}
	return m, m.InputPerMTok > 0 || m.OutputPerMTok > 0
}
