package frame

import (
	"slices"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

const hexDigits = "0123456789abcdef"

// appendLabelString appends s as a JSON string exactly as the SDK's
// json.Marshal(data.Labels) writes it: Labels.MarshalJSON (jsoniter's
// WriteString: `"` and `\` escaped, \n \r \t short, other control bytes as
// \u00XX, every other byte verbatim, invalid UTF-8 included), then
// encoding/json's compaction of Marshaler output (<, >, & and U+2028,
// U+2029 escaped). TestLabelsJSONMatchesSDK and FuzzLabelsJSON pin it.
func appendLabelString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		var esc string
		switch {
		case b == '"':
			esc = `\"`
		case b == '\\':
			esc = `\\`
		case b == '\n':
			esc = `\n`
		case b == '\r':
			esc = `\r`
		case b == '\t':
			esc = `\t`
		case b < 0x20, b == '<', b == '>', b == '&':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			start = i + 1
			continue
		case b == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xA8:
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[s[i+2]&0xF])
			i += 2
			start = i + 1
			continue
		default:
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = append(dst, esc...)
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendLabelsJSON appends labels as the SDK's json.Marshal(labels) writes
// them: an object with the keys sorted. keys is scratch for the sort and is
// returned for reuse.
func appendLabelsJSON(dst []byte, labels data.Labels, keys []string) ([]byte, []string) {
	keys = keys[:0]
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendLabelString(dst, k)
		dst = append(dst, ':')
		dst = appendLabelString(dst, labels[k])
	}
	return append(dst, '}'), keys
}
