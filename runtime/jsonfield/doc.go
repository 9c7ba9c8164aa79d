// Package jsonfield owns the readers of JSON input that config validation is made of: an Object of raw fields
// with its JSON path, typed reads that report the first problem as a 400 *gwerr.Error naming that path
// (Invalid, CodeInvalidConfig), path building (Join, Index), type names for messages (Kind, Describe) and
// "did you mean" suggestions.
//
// It is a leaf, importing only the standard library and runtime/gwerr, so that every validator of a piece of
// a config can use it without importing runtime/config: provider adapters check the fields they declare with
// it (runtime/config imports the adapters' registry, so an adapter importing runtime/config would close a
// circle), and runtime/config and runtime/bootstrap read with it. It knows no field names.
//
// Objects are built per validation and are not safe for concurrent use; the functions are.
//
//	o, err := jsonfield.NewObject(raw, "targets[0]")
//	s, ok, err := o.Str("custom_host", false, true) // error Param: targets[0].custom_host
package jsonfield
