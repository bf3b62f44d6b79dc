// Package settings owns the typed settings of a Quiver data-source instance:
// the table of every setting (table.go: key, type, default, range or
// accepted values, secret or not, help), jsonData and decrypted
// secureJsonData parsed once from it (unknown keys included), defaults
// applied, and Validate, driven by the same table, whose errors name the
// JSON key and the accepted values so that an administrator can act on them
// from the health check.
//
// Package codec owns the codecs' names, level ranges and what each level
// becomes; codecs_gen.go carries them here, and `go generate` (internal/settingsgen)
// writes it, src/generated/settings.ts (the editor's facts and message
// templates) and README's settings table from the table. A test fails when
// any of them is stale.
//
// It also owns the process-wide memory budget (ReadBudget, budget.go): a
// plugin-wide setting, not any instance's jsonData.
//
// JSON keys are identical to the frontend's. Secrets are typed Secret and
// never print; messages quote at most QuoteMax bytes of any value.
// settings imports the standard library only.
package settings

//go:generate go run ../../internal/settingsgen
