package providers

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
)

// The registry: adapters register their descriptors from init, and everything else reads them. Reads far
// outnumber writes (one Lookup per routed request), hence the RWMutex; derived views (fields, names) are
// rebuilt on each Register, never mutated, so that a reader may keep a slice it was given.
var (
	registryMu  sync.RWMutex
	descriptors = map[string]*Descriptor{} // by canonical identifier
	names       = map[string]string{}      // identifier or alias → identifier
	fieldList   []Field                    // every provider field once, by provider identifier, then declaration order
	fieldIndex  = map[string]int{}         // field name → index in fieldList
)

// Register makes a provider available under its identifier and aliases. It panics on a duplicate name, on a
// field declared by two providers with different kinds, and on a descriptor that is incomplete: each is a
// programming error. Adapters call it from init.
func Register(d Descriptor) {
	if err := d.validate(); err != nil {
		panic("providers: " + err.Error())
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, name := range append([]string{d.ID}, d.Aliases...) {
		if _, dup := names[name]; dup {
			panic(fmt.Sprintf("providers: %q registered twice", name))
		}
	}
	for _, f := range d.Fields {
		if i, ok := fieldIndex[f.Name]; ok && fieldList[i].Kind != f.Kind {
			panic(fmt.Sprintf("providers: field %q of %q is a %s, but another provider declares it a %s", f.Name, d.ID, f.Kind, fieldList[i].Kind))
		}
	}
	d.adapter = d.New()
	descriptors[d.ID] = &d
	names[d.ID] = d.ID
	for _, a := range d.Aliases {
		names[a] = d.ID
	}
	rebuildFields()
}

// rebuildFields recomputes fieldList and fieldIndex; the caller holds the write lock.
func rebuildFields() {
	ids := make([]string, 0, len(descriptors))
	for id := range descriptors {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	list, index := []Field{}, map[string]int{}
	for _, id := range ids {
		for _, f := range descriptors[id].Fields {
			if _, ok := index[f.Name]; !ok {
				index[f.Name] = len(list)
				list = append(list, f)
			}
		}
	}
	fieldList, fieldIndex = list, index
}

// Lookup returns the adapter registered for a canonical identifier.
func Lookup(id string) (Adapter, bool) {
	registryMu.RLock()
	d, ok := descriptors[id]
	registryMu.RUnlock()
	if !ok {
		return nil, false
	}
	return d.adapter, true
}

// Describe returns the descriptor registered for a canonical identifier. It is shared: read it, never change it.
func Describe(id string) (*Descriptor, bool) {
	registryMu.RLock()
	d, ok := descriptors[id]
	registryMu.RUnlock()
	return d, ok
}

// Canonical returns the identifier that name stands for (an identifier or an alias) and whether it is known.
func Canonical(name string) (string, bool) {
	registryMu.RLock()
	id, ok := names[name]
	registryMu.RUnlock()
	return id, ok
}

// DefaultBaseURL returns a canonical identifier's default base URL, or "" when its adapter builds one.
func DefaultBaseURL(id string) string {
	if d, ok := Describe(id); ok {
		return d.BaseURL
	}
	return ""
}

// Identifiers lists the known identifiers and aliases in order, for error messages.
func Identifiers() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Sorted(maps.Keys(names))
}

// Registered lists the canonical identifiers in order.
func Registered() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Sorted(maps.Keys(descriptors))
}

// Fields lists every registered provider field once: by provider identifier, then in each descriptor's order.
// A config object and a stored provider accept each of them whatever their provider, since the provider may
// come later (from the request's headers, or a stored provider a config names). The slice is shared: read it.
func Fields() []Field {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return fieldList
}

// FieldByName returns the registered provider field of that name.
func FieldByName(name string) (Field, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	i, ok := fieldIndex[name]
	if !ok {
		return Field{}, false
	}
	return fieldList[i], true
}
