package settings

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The memory budget is one for the whole plugin process, whereas jsonData
// belongs to one data-source instance: so it is a plugin-wide setting, set
// the way Grafana sets those, in grafana.ini's section of the plugin
// (IniSection), whose keys Grafana passes to the plugin process as
// GF_PLUGIN_<KEY> variables, on every version. The QUIVER_* variables of
// the host's environment are the fallback for a key the section does not
// set: Grafana 12.4 and later pass them only when [plugins]
// forward_host_env_vars lists the plugin.
const (
	// IniSection is grafana.ini's section of the plugin's settings.
	IniSection = "[plugin.quiver-arrow-datasource]"
	// IniMemoryBudget sets the bytes that in-flight queries may hold at
	// once: a size ("512MiB", "1GiB", "300MB", "268435456").
	IniMemoryBudget = "memory_budget"
	// IniMemoryBudgetWait sets how long a query waiting for budget waits
	// while nothing is released before it fails as busy: a Go duration
	// ("20s", "2m"; default 30s, within MinBudgetWait – MaxBudgetWait). A
	// queue that moves is waited out.
	IniMemoryBudgetWait = "memory_budget_wait"
	// IniGoMemoryLimit sets the Go runtime's soft memory limit (a size, as
	// memory_budget; see Budget.GoMemoryLimit for the default).
	IniGoMemoryLimit = "go_memory_limit"

	// EnvMemoryBudget and EnvMemoryBudgetWait are the fallbacks of
	// memory_budget and memory_budget_wait in the host's environment.
	EnvMemoryBudget     = "QUIVER_MEMORY_BUDGET"
	EnvMemoryBudgetWait = "QUIVER_MEMORY_BUDGET_WAIT"

	// MemoryBudgetSetting names the setting in messages.
	MemoryBudgetSetting = IniMemoryBudget + " in " + IniSection
)

// GrafanaEnv is the variable Grafana sets in the plugin's environment for
// key of its grafana.ini section: GF_PLUGIN_ and the key in upper case.
func GrafanaEnv(key string) string { return "GF_PLUGIN_" + strings.ToUpper(key) }

// lookup returns the value of a plugin-wide setting (key in grafana.ini,
// else the env fallback when there is one) and how to name where it came
// from.
func lookup(getenv func(string) string, key, env string) (v, from string) {
	if v = strings.TrimSpace(getenv(GrafanaEnv(key))); v != "" {
		return v, key + " in " + IniSection
	}
	if env != "" {
		if v = strings.TrimSpace(getenv(env)); v != "" {
			return v, env
		}
	}
	return "", ""
}

// Defaults and ranges of the memory budget.
const (
	// DefaultBudget: without memory_budget, in-flight queries may hold
	// 256 MiB at once. The plugin does not read the host's memory (/proc,
	// cgroups): Grafana's plugin rules keep plugins off the file system,
	// and a budget the administrator states is one they can reason about.
	// A Go heap runs up to twice its live bytes between collections, and
	// the plugin shares the host with Grafana: raise it on large hosts.
	DefaultBudget = 256 << 20
	MinBudget     = 4 << 20
	MaxBudget     = 1 << 40

	// DefaultBudgetWait: a waiting query fails as busy when the queries
	// holding the budget release nothing for this long (they are stuck
	// upstream, or the budget is too small for them).
	DefaultBudgetWait = 30 * time.Second
	// MinBudgetWait: a shorter wait would fail every query that waits at
	// all (at 0s, at once), however fast the budget moves.
	MinBudgetWait         = time.Second
	MaxBudgetWait         = 10 * time.Minute
	budgetGoLimitHeadroom = 128 << 20
	// MinGoMemoryLimit: below it the collector would run all the time.
	MinGoMemoryLimit = 64 << 20
)

// Budget is the process-wide memory budget of in-flight queries.
type Budget struct {
	// Bytes in-flight queries may hold at once.
	Bytes int64
	// Wait is how long a waiting query waits while nothing is released
	// before it fails as busy.
	Wait time.Duration
	// From says where Bytes comes from, for error messages and the log:
	// "memory_budget in [plugin.quiver-arrow-datasource] = 512MiB" or
	// "default".
	From string
	// GoLimit is the Go runtime's soft memory limit that go_memory_limit
	// sets; 0 for the default (GoMemoryLimit).
	GoLimit int64
}

// GoMemoryLimit is the soft memory limit the plugin gives the Go runtime
// (runtime/debug.SetMemoryLimit) unless the runtime's GOMEMLIMIT is set:
// go_memory_limit, else one and a half budgets plus headroom for the
// encoders, pools and the process itself (512 MiB for the default 256 MiB).
// The collector then runs more often as the heap nears it instead of
// letting garbage double the heap; it is soft, so a heap that must grow
// past it (an overdraft, see package pipeline) does, at the cost of more
// collection.
func (b Budget) GoMemoryLimit() int64 {
	if b.GoLimit > 0 {
		return b.GoLimit
	}
	return min(b.Bytes, math.MaxInt64/4)/2*3 + budgetGoLimitHeadroom
}

// ReadBudget reads the budget from the plugin's settings in its
// environment (getenv, os.Getenv in production: grafana.ini's section as
// Grafana passes it, then the QUIVER_* fallbacks). A setting it cannot use
// keeps its default, the others are still read: the error names each such
// setting and the accepted values.
func ReadBudget(getenv func(string) string) (Budget, error) {
	b := Budget{Bytes: DefaultBudget, Wait: DefaultBudgetWait, From: "default"}
	var errs []error
	bad := func(from, format string, args ...any) {
		errs = append(errs, fmt.Errorf("settings: "+from+": "+format, args...))
	}
	// size reads a size setting of at least lo and at most MaxBudget.
	size := func(key, env string, lo int64, set func(n int64, v, from string)) {
		if v, from := lookup(getenv, key, env); v != "" {
			n, err := parseBudgetBytes(v)
			switch {
			case err != nil:
				bad(from, "%s %w", quote(v), err)
			case n < lo || n > MaxBudget:
				bad(from, "%s is not within %s – %s", quote(v), FormatBytes(lo), FormatBytes(MaxBudget))
			default:
				set(n, v, from)
			}
		}
	}
	size(IniMemoryBudget, EnvMemoryBudget, MinBudget, func(n int64, v, from string) { b.Bytes, b.From = n, from+" = "+v })
	if v, from := lookup(getenv, IniMemoryBudgetWait, EnvMemoryBudgetWait); v != "" {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			bad(from, "%s is not a Go duration (\"20s\", \"1m\") within %s – %s", quote(v), MinBudgetWait, MaxBudgetWait)
		case d < MinBudgetWait:
			bad(from, "%s is below %s: every query that has to wait for the memory budget would fail as busy at once; give a duration within %s – %s", quote(v), MinBudgetWait, MinBudgetWait, MaxBudgetWait)
		case d > MaxBudgetWait:
			bad(from, "%s is not within %s – %s", quote(v), MinBudgetWait, MaxBudgetWait)
		default:
			b.Wait = d
		}
	}
	size(IniGoMemoryLimit, "", MinGoMemoryLimit, func(n int64, _, _ string) { b.GoLimit = n })
	return b, errors.Join(errs...)
}

// byteUnits are the suffixes parseBudgetBytes accepts, longest first.
var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

func parseBudgetBytes(v string) (int64, error) {
	if strings.HasSuffix(v, "%") {
		return 0, fmt.Errorf(`is a percentage: the plugin does not read the host's memory; give a size such as "512MiB"`)
	}
	mult := int64(1)
	num := v
	for _, u := range byteUnits {
		if s, ok := strings.CutSuffix(v, u.suffix); ok {
			num, mult = strings.TrimSpace(s), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || !(f > 0) || f*float64(mult) > float64(math.MaxInt64/2) {
		return 0, fmt.Errorf(`is not a size ("512MiB", "1GiB", "300MB", bytes)`)
	}
	return int64(f * float64(mult)), nil
}

// FormatBytes formats n in binary units ("512 MiB", "1.5 GiB").
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 || f == math.Trunc(f) {
		return fmt.Sprintf("%d %s", int64(f), units[i])
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
