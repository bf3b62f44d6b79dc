package settings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Numbers in jsonData arrive as JSON numbers or as strings holding one
// (frontends store text inputs as strings); "", null and an absent key mean
// "not set", so the default applies.

// numberText returns the text of a JSON number or of a string holding one,
// and whether it is set.
func numberText(b []byte) (string, bool, error) {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return "", false, nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return "", false, err
		}
		s = strings.TrimSpace(s)
	}
	return s, s != "", nil
}

// jsonInt64 is a whole number setting.
type jsonInt64 struct {
	set bool
	v   int64
}

func (n *jsonInt64) UnmarshalJSON(b []byte) error {
	s, ok, err := numberText(b)
	if err != nil || !ok {
		return err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != float64(int64(f)) {
			return fmt.Errorf("%s is not a whole number", quote(s))
		}
		v = int64(f)
	}
	n.set, n.v = true, v
	return nil
}

// jsonFloat64 is a number setting.
type jsonFloat64 struct {
	set bool
	v   float64
}

func (n *jsonFloat64) UnmarshalJSON(b []byte) error {
	s, ok, err := numberText(b)
	if err != nil || !ok {
		return err
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("%s is not a number", quote(s))
	}
	n.set, n.v = true, v
	return nil
}

// jsonString is a string setting; null means "not set".
type jsonString string

func (s *jsonString) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("%s is not a string", quote(string(b)))
	}
	*s = jsonString(v)
	return nil
}
