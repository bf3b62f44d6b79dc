package main

import (
	"bytes"
	"errors"
	"strings"

	"github.com/quiverdata/quiver/pkg/settings"
)

// The README's settings table lies between these markers.
const (
	readmeBegin = "<!-- settings table: generated from pkg/settings/table.go by `go generate ./pkg/settings`; do not edit -->\n"
	readmeEnd   = "<!-- end of settings table -->\n"
)

// spliceREADME replaces the table between the markers of readme.
func spliceREADME(readme []byte, cs []settings.CodecSpec) ([]byte, error) {
	before, rest, ok := bytes.Cut(readme, []byte(readmeBegin))
	if !ok {
		return nil, errors.New("README.md: no settings table marker " + strings.TrimSpace(readmeBegin))
	}
	_, after, ok := bytes.Cut(rest, []byte(readmeEnd))
	if !ok {
		return nil, errors.New("README.md: no end marker " + strings.TrimSpace(readmeEnd))
	}
	var b bytes.Buffer
	b.Write(before)
	b.WriteString(readmeBegin)
	b.WriteString(readmeTable(cs))
	b.WriteString(readmeEnd)
	b.Write(after)
	return b.Bytes(), nil
}

func readmeTable(cs []settings.CodecSpec) string {
	var b strings.Builder
	b.WriteString("| key | where | type | default | accepted | what it does |\n|---|---|---|---|---|---|\n")
	for _, st := range settings.Table() {
		where := "jsonData"
		if st.Secret() {
			where = "secureJsonData"
		}
		if st.Upstream != "" {
			where += ", " + st.Upstream
		}
		key := st.Key
		if st.Numbered() {
			key = strings.TrimSuffix(key, "N") + "1…N"
		}
		acc := accepted(st, cs)
		if st.ByCodec {
			acc = levelled(cs, "; ", func(c settings.CodecSpec) string {
				return c.Name + " " + itoa(c.MinLevel) + "–" + itoa(c.MaxLevel) + " (" + levelRuns(c) + ")"
			})
		}
		typ := string(st.Type)
		row := []string{"`" + key + "`", where, typ, md(defaultText(st, cs)), md(acc), md(st.Help)}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	return b.String()
}

func itoa(v int64) string { return settings.FormatNumber(float64(v)) }

// md escapes what a Markdown table cell cannot hold.
func md(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
