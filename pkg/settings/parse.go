package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// HeaderNumber is the N of headerNameN and headerValueN: 1, 2, … (the
// editor reads the keys with the same pattern).
const HeaderNumber = `[1-9][0-9]*`

var headerNameKey = regexp.MustCompile(`^headerName(` + HeaderNumber + `)$`)

// Parse reads an instance's jsonData and decrypted secureJsonData in one
// decode, driven by Table, and applies defaults: absent keys, null and ""
// mean the default, and numbers may arrive as JSON numbers or as strings
// (text inputs store those). Keys of another upstream are not read (a demo
// instance keeps working with the leftovers of a Flight SQL
// configuration). Keys Quiver does not read are listed in Unknown. It
// fails only on values it cannot read, naming each key; call Validate for
// the checks of the values.
func Parse(jsonData []byte, secure map[string]string) (Settings, error) {
	if len(jsonData) > MaxJSONData {
		return Settings{}, fmt.Errorf("settings: jsonData is %d bytes, more than the %d bytes (1 MiB) Quiver reads", len(jsonData), MaxJSONData)
	}
	var keys map[string]json.RawMessage
	if len(bytes.TrimSpace(jsonData)) > 0 {
		if err := json.Unmarshal(jsonData, &keys); err != nil {
			return Settings{}, fmt.Errorf("settings: jsonData is not a JSON object: %w", err)
		}
	}
	var s Settings
	var errs []error
	levelSet := false
	for i := range table {
		st := &table[i]
		if st.index == nil {
			continue
		}
		if st.Default != nil {
			st.set(&s, st.Default) // another upstream's settings too
		}
		if st.Upstream != "" && st.Upstream != s.Upstream {
			continue // upstream comes first in the table
		}
		if st.Secret() {
			st.set(&s, Secret(secure[st.Key]))
			continue
		}
		raw, ok := keys[st.Key]
		if !ok {
			continue
		}
		set, err := st.decode(&s, raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("settings: %s: %w", st.Key, err))
		}
		levelSet = levelSet || (st.ByCodec && set)
	}
	if !levelSet {
		s.Level = codecByName(s.Codec).DefaultLevel
	}
	if s.Upstream == UpstreamFlightSQL {
		h, err := parseHeaders(keys, secure)
		if err != nil {
			errs = append(errs, err)
		}
		s.FlightSQL.Headers = h
	}
	s.Warnings = append(unknownKeys(keys, secure), s.FlightSQL.identityWarnings()...)
	if len(errs) > 0 {
		return Settings{}, errors.Join(errs...)
	}
	return s, nil
}

// parseHeaders reads headerNameN from jsonData and headerValueN from the
// secrets, sorted by N; rows without a name are skipped (an emptied row of
// the header editor).
func parseHeaders(keys map[string]json.RawMessage, secure map[string]string) ([]Header, error) {
	var hs []Header
	var errs []error
	for k, v := range keys {
		m := headerNameKey.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		var name string
		if err := json.Unmarshal(v, &name); err != nil {
			errs = append(errs, fmt.Errorf("settings: %s: must be a string", keyName(k)))
			continue
		}
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		idx, err := strconv.Atoi(m[1])
		if err != nil {
			errs = append(errs, fmt.Errorf("settings: %s: the header number is out of range", keyName(k)))
			continue
		}
		hs = append(hs, Header{Index: idx, Name: name, Value: Secret(secure["headerValue"+m[1]])})
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Index < hs[j].Index })
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return hs, errors.Join(errs...)
}

// set stores v (of the setting's Go type) in the setting's field of s.
func (st *Setting) set(s *Settings, v any) {
	reflect.ValueOf(st.field(s)).Elem().Set(reflect.ValueOf(v))
}

// decode reads one jsonData value into s; set is false when the value
// means "not set" (null, "", so the default stays).
func (st *Setting) decode(s *Settings, raw json.RawMessage) (set bool, err error) {
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("null")) {
		return false, nil
	}
	switch st.Type {
	case String:
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return false, errors.New(fill(MsgNotAText, "{value}", quote(string(raw))))
		}
		v = st.normalized(v)
		if v == "" {
			return false, nil
		}
		st.set(s, v)
	case Bool:
		var v bool
		if err := json.Unmarshal(raw, &v); err != nil {
			text := string(raw)
			if json.Unmarshal(raw, &text) == nil && strings.TrimSpace(text) == "" {
				return false, nil // a JSON string: "" is not set, as for every setting
			}
			return false, errors.New(fill(MsgNotABool, "{value}", quote(text)))
		}
		st.set(s, v)
	case Integer, Number:
		// A JSON number, or a string holding one ("" is not set); any
		// other JSON value is taken as it is and fails to parse.
		text := string(raw)
		if raw[0] == '"' {
			if err := json.Unmarshal(raw, &text); err != nil {
				return false, err
			}
			if text = strings.TrimSpace(text); text == "" {
				return false, nil
			}
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			msg := MsgNotANum
			if st.Type == Integer {
				msg = MsgWhole
			}
			return false, errors.New(fill(msg, "{value}", quote(text)))
		}
		if st.Type == Number {
			st.set(s, f)
			return true, nil
		}
		if f != math.Trunc(f) {
			return false, errors.New(fill(MsgWhole, "{value}", FormatNumber(f)))
		}
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil { // 1e3, 3.0, or beyond int64
			if f < math.MinInt64 || f >= math.MaxInt64 {
				lo, hi, unit, _ := st.bounds(s)
				return false, errors.New(rangeMessage(FormatNumber(f), lo, hi, unit))
			}
			v = int64(f)
		}
		st.set(s, v)
	default:
		return false, fmt.Errorf("settings: %s: cannot decode type %s", st.Key, st.Type)
	}
	return true, nil
}

// bounds returns the range of a numeric setting for s (level: its codec's);
// ok is false when the setting has no range to check in s (level of codec
// none or of an unknown codec).
func (st *Setting) bounds(s *Settings) (lo, hi float64, unit string, ok bool) {
	if !st.ByCodec {
		return st.Min, st.Max, st.Unit, st.Max != 0
	}
	c := codecByName(s.Codec)
	if !c.Levels {
		return 0, 0, "", false
	}
	return float64(c.MinLevel), float64(c.MaxLevel), c.Name + " levels", true
}

// check returns the table's checks of the settings that upstream reads
// ("" for the settings every instance reads): accepted values and ranges.
func (s *Settings) check(upstream string) []error {
	var errs []error
	for i := range table {
		st := &table[i]
		if st.index == nil || st.Upstream != upstream {
			continue
		}
		switch {
		case len(st.Values) > 0:
			v := *st.field(s).(*string)
			if !slices.Contains(st.Values, v) {
				errs = append(errs, fmt.Errorf("settings: %s: %s", st.Key, oneOfMessage(v, st.Values)))
			}
		case st.Type == Integer || st.Type == Number:
			lo, hi, unit, ok := st.bounds(s)
			if v, text := st.number(s); ok && (math.IsNaN(v) || v < lo || v > hi) {
				errs = append(errs, fmt.Errorf("settings: %s: %s", st.Key, rangeMessage(text, lo, hi, unit)))
			}
		}
	}
	return errs
}

// number returns a numeric setting's field of s (*int64 or *float64, as
// TestTableCoversEverySetting checks) as a float64, for range checks, and
// written as a message shows it.
func (st *Setting) number(s *Settings) (float64, string) {
	if p, ok := st.field(s).(*int64); ok {
		return float64(*p), strconv.FormatInt(*p, 10)
	}
	v := *st.field(s).(*float64)
	return v, FormatNumber(v)
}
