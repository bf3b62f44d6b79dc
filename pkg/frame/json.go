package frame

import (
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

const hexDigits = "0123456789abcdef"

// quoting is how a string is escaped into JSON: which of the SDK's three
// string writers it matches.
type quoting uint8

const (
	// quotePlain is jsoniter's Stream.WriteString, which the SDK's frame
	// JSON uses for names, refIds and labels: `"` and `\` escaped, \n \r \t
	// short, other control bytes as \u00XX, every other byte verbatim
	// (invalid UTF-8 included).
	quotePlain quoting = iota
	// quoteCompacted is quotePlain followed by encoding/json's compaction
	// of a Marshaler's output, as json.Marshal(data.Labels) writes labels
	// in Arrow field metadata: also <, >, & and U+2028, U+2029 escaped.
	quoteCompacted
	// quoteHTML is jsoniter's WriteStringWithHTMLEscaped, how the SDK's
	// frame JSON writes string values: quoteCompacted, and each byte of
	// invalid UTF-8 as \ufffd.
	quoteHTML
)

// safeBytes[q][b] is true when byte b is written verbatim under q without
// a further look (multi-byte UTF-8 needs one under quoteCompacted and
// quoteHTML).
var safeBytes = func() (t [3][256]bool) {
	for b := 0x20; b < 0x100; b++ {
		t[quotePlain][b] = b != '"' && b != '\\'
		t[quoteCompacted][b] = t[quotePlain][b] && b < utf8.RuneSelf && b != '<' && b != '>' && b != '&'
		t[quoteHTML][b] = t[quoteCompacted][b]
	}
	return t
}()

// appendQuoted appends s as a JSON string escaped as q says.
func appendQuoted(dst []byte, s string, q quoting) []byte {
	dst = append(dst, '"')
	safe := &safeBytes[q]
	i := 0
	for i < len(s) && safe[s[i]] {
		i++
	}
	if i == len(s) {
		dst = append(dst, s...)
		return append(dst, '"')
	}
	start := 0
	for i < len(s) {
		b := s[i]
		if safe[b] {
			i++
			continue
		}
		if b >= utf8.RuneSelf {
			// quoteCompacted or quoteHTML: U+2028 and U+2029 escaped;
			// under quoteHTML, invalid UTF-8 replaced byte by byte.
			if b == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xA8 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[s[i+2]&0xF])
				i += 3
				start = i
				continue
			}
			if q != quoteHTML {
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default: // other control bytes; <, >, & under quoteCompacted and quoteHTML
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendComma appends the comma that precedes element i of a JSON array or
// object. The value loops in generic closures (jsonOf, jsonFixed, recordVar)
// compare i themselves: a call there is not inlined.
func appendComma(dst []byte, i int) []byte {
	if i > 0 {
		return append(dst, ',')
	}
	return dst
}

// appendLabelsQuoted appends labels as a JSON object with its keys sorted
// and its strings escaped as q says (quoteCompacted: as the SDK's
// json.Marshal(labels) writes them). keys is scratch for the sort and is
// returned for reuse.
func appendLabelsQuoted(dst []byte, labels data.Labels, keys []string, q quoting) ([]byte, []string) {
	keys = slices.AppendSeq(keys[:0], maps.Keys(labels))
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		dst = appendComma(dst, i)
		dst = appendQuoted(dst, k, q)
		dst = append(dst, ':')
		dst = appendQuoted(dst, labels[k], q)
	}
	return append(dst, '}'), keys
}
