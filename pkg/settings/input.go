package settings

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// QuoteMax is how many bytes of a value quote keeps; package source's Quote
// keeps as many (a test in package plugin checks that both agree: settings
// imports nothing of Quiver).
const QuoteMax = 64

// quote returns v Go-quoted for an error message, cut to its first QuoteMax
// bytes at a rune boundary with the full length appended. Never call it
// with a secret.
func quote(v string) string {
	if len(v) <= QuoteMax {
		return strconv.Quote(v)
	}
	cut := QuoteMax
	for cut > QuoteMax-utf8.UTFMax && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return strconv.Quote(v[:cut]) + "… (" + strconv.Itoa(len(v)) + " bytes)"
}

// keyName returns a jsonData key as is for a message, or quoted and cut
// when it is longer than QuoteMax.
func keyName(k string) string {
	if len(k) <= QuoteMax {
		return k
	}
	return quote(k)
}

// checkHeaderText reports what is wrong with a value sent in a gRPC header
// (a header value, a token, a user name): gRPC and HTTP/2 accept printable
// ASCII only, and CR, LF or NUL would split or cut the header. The error
// never quotes the value, which may be secret.
func checkHeaderText(v string) error {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\r' || c == '\n':
			return fmt.Errorf("contains a line break (byte %d): paste the value without CR/LF", i+1)
		case c == 0:
			return fmt.Errorf("contains a NUL byte (byte %d)", i+1)
		case c < 0x20 || c > 0x7e:
			return fmt.Errorf("contains a byte that is not printable ASCII (byte %d, 0x%02x): gRPC headers accept printable ASCII only", i+1, c)
		}
	}
	return nil
}

// checkNoControl reports a CR, LF or NUL in a password: it is base64-encoded
// into the header, so any other byte is fine.
func checkNoControl(v string) error {
	if i := strings.IndexAny(v, "\r\n\x00"); i >= 0 {
		return fmt.Errorf("contains a line break or NUL byte (byte %d)", i+1)
	}
	return nil
}

// grafanaKeys are jsonData keys Grafana itself may store for any data
// source; they are not warned about.
var grafanaKeys = []string{"manageAlerts", "alertmanagerUid", "disableGrafanaCache", "timeInterval", "defaultRegion", "profile"}

var headerValueKey = regexp.MustCompile(`^headerValue(` + HeaderNumber + `)$`)

// knownKeys returns every jsonData key Quiver reads (the table's, Grafana's)
// except the numbered headerNameN.
func knownKeys() []string {
	var keys []string
	for _, st := range table {
		if !st.Secret() && !st.Numbered() {
			keys = append(keys, st.Key)
		}
	}
	return append(keys, grafanaKeys...)
}

// maxWarned bounds how many unknown keys a warning names.
const maxWarned = 5

// unknownKeys returns one line per jsonData key Quiver does not read (a
// misspelled key is otherwise silently ignored) and per secureJsonData key
// it does not use (headerValueN without its headerNameN), with a
// suggestion when a known key is close: `"maxseries" (did you mean
// "maxSeries"?)`. It names keys only, never a value.
func unknownKeys(keys map[string]json.RawMessage, secure map[string]string) []string {
	known := knownKeys()
	var unknown []string
	for k := range keys {
		if headerNameKey.MatchString(k) || slices.Contains(known, k) {
			continue
		}
		unknown = append(unknown, k)
	}
	sort.Strings(unknown)
	var out []string
	for i, k := range unknown {
		if i == maxWarned {
			out = append(out, fmt.Sprintf("and %d more unknown jsonData keys", len(unknown)-maxWarned))
			break
		}
		msg := "jsonData key " + quote(k) + " is not a Quiver setting"
		if s := suggest(k, known); s != "" {
			msg += " (did you mean " + strconv.Quote(s) + "?)"
		}
		out = append(out, msg)
	}
	var orphans []string
	for k := range secure {
		if m := headerValueKey.FindStringSubmatch(k); m != nil {
			// An emptied row of the header editor stores its value as "".
			if secure[k] != "" && !namesHeader(keys["headerName"+m[1]]) {
				orphans = append(orphans, k)
			}
		} else if !slices.ContainsFunc(table, func(st Setting) bool { return st.Key == k && st.Secret() }) {
			orphans = append(orphans, k)
		}
	}
	sort.Strings(orphans)
	for i, k := range orphans {
		if i == maxWarned {
			out = append(out, fmt.Sprintf("and %d more unused secureJsonData keys", len(orphans)-maxWarned))
			break
		}
		if m := headerValueKey.FindStringSubmatch(k); m != nil {
			out = append(out, fmt.Sprintf("secureJsonData key %q is not sent: headerName%s is not set", k, m[1]))
		} else {
			out = append(out, "secureJsonData key "+quote(k)+" is not a Quiver setting")
		}
	}
	return out
}

// namesHeader says whether a headerNameN value names a header: a string
// that is not blank. A value that is not a string is an error of its own
// (parseHeaders), so it counts as naming one.
func namesHeader(raw json.RawMessage) bool {
	if raw == nil {
		return false
	}
	var name string
	if json.Unmarshal(raw, &name) != nil {
		return true
	}
	return strings.TrimSpace(name) != ""
}

// suggest returns the known key closest to k: the same letters in another
// case, or at most two edits away for keys of four letters or more.
func suggest(k string, known []string) string {
	best, bestD := "", 3
	for _, c := range known {
		if strings.EqualFold(c, k) {
			return c
		}
		if len(k) < 4 || len(k) > 64 {
			continue
		}
		if d := editDistance(strings.ToLower(k), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
