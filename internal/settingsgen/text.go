package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/quiverdata/quiver/pkg/settings"
)

// accepted says in words what a setting accepts ("" when anything of its
// type goes): the editor's tooltips and the README use it.
func accepted(st settings.Setting, cs []settings.CodecSpec) string {
	switch {
	case len(st.Values) > 0:
		return strings.Join(st.Values, ", ")
	case st.ByCodec:
		return levelled(cs, ", ", func(c settings.CodecSpec) string {
			return fmt.Sprintf("%s %d to %d", c.Name, c.MinLevel, c.MaxLevel)
		})
	case st.Max != 0:
		s := settings.FormatNumber(st.Min) + " to " + settings.FormatNumber(st.Max)
		if st.Unit != "" {
			s += " " + st.Unit
		}
		return s
	}
	return ""
}

// levelled writes each codec of cs that takes a level with text, joined
// by sep.
func levelled(cs []settings.CodecSpec, sep string, text func(settings.CodecSpec) string) string {
	var parts []string
	for _, c := range cs {
		if c.Levels {
			parts = append(parts, text(c))
		}
	}
	return strings.Join(parts, sep)
}

// defaultText writes a setting's default ("" when it has none worth
// saying: an empty string or false).
func defaultText(st settings.Setting, cs []settings.CodecSpec) string {
	if st.ByCodec {
		return levelled(cs, ", ", func(c settings.CodecSpec) string { return fmt.Sprintf("%s %d", c.Name, c.DefaultLevel) })
	}
	if st.Type == settings.Bool {
		if st.Default == true {
			return "on"
		}
		return "off"
	}
	switch v := st.Default.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return settings.FormatNumber(v)
	}
	return ""
}

// description is a setting's help with what it accepts and its default:
// the editor's tooltip.
func description(st settings.Setting, cs []settings.CodecSpec) string {
	d := st.Help
	if a := accepted(st, cs); a != "" {
		d += " Accepted: " + a + "."
	}
	if def := defaultText(st, cs); def != "" {
		d += " Default: " + def + "."
	}
	return d
}

// levelRuns writes what a codec's levels become: "1–2 zstd fastest, 3–5
// zstd default", eliding the middle of a long list.
func levelRuns(c settings.CodecSpec) string {
	var parts []string
	for _, r := range c.Effective {
		if r.From == r.To {
			parts = append(parts, fmt.Sprintf("%d %s", r.From, r.Effective))
		} else {
			parts = append(parts, fmt.Sprintf("%d–%d %s", r.From, r.To, r.Effective))
		}
	}
	if len(parts) > 5 {
		parts = append(parts[:2:2], "…", parts[len(parts)-1])
	}
	return strings.Join(parts, ", ")
}
