package main

import (
	"errors"
	"strings"
	"unicode/utf8"

	sdk "github.com/llmgw/gateway/sdk-guest"
)

// Check ids "<plugin>.maxChars" and "<plugin>.noDigits" both run this plugin: the name after the first dot
// says which check.
func init() {
	sdk.HandleCheck(func(in sdk.Input) sdk.Result {
		_, name, _ := strings.Cut(in.CheckID, ".")
		switch name {
		case "maxChars":
			max, ok := in.ParamInt("max")
			if !ok {
				return sdk.Error(errors.New(`maxChars: parameter "max" (an integer) is required`))
			}
			if n := utf8.RuneCountInString(in.Text); int64(n) > max {
				return sdk.Fail("text too long").With("chars", n).With("max", max)
			}
			return sdk.Pass()
		case "noDigits":
			if strings.ContainsAny(in.Text, "0123456789") {
				return sdk.Fail("the text has digits")
			}
			return sdk.Pass()
		}
		return sdk.Error(errors.New("unknown check " + in.CheckID + " (this plugin has maxChars and noDigits)"))
	})
}

func main() {}
