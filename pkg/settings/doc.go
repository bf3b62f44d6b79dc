// Package settings owns the typed settings of a Quiver data-source instance:
// jsonData and decrypted secureJsonData parsed once, defaults applied, and
// Validate, whose errors name the JSON key and the accepted values so that
// an administrator can act on them from the health check.
//
// It also owns the process-wide memory budget (ReadBudget): one for the
// plugin process, so it comes from the environment (QUIVER_MEMORY_BUDGET)
// and the host's memory, not from any instance's jsonData.
//
// JSON keys are identical to the frontend's. Secrets are typed Secret and
// never print; messages quote at most QuoteMax bytes of any value.
// settings imports the standard library only.
package settings
