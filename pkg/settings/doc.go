// Package settings owns the typed settings of a Quiver data-source instance:
// jsonData and decrypted secureJsonData parsed once, defaults applied, and
// Validate, whose errors name the JSON key and the accepted values so that
// an administrator can act on them from the health check.
//
// JSON keys are identical to the frontend's. Secrets are typed Secret and
// never print. settings imports the standard library only.
//go:generate go run ./internal/gen

package settings
