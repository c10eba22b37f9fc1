package file

import (
	"encoding/base64"
	"fmt"
)

// DecodeField returns the bytes of a field that a JSON Lines or YAML file
// gives either as text (name) or as standard base64 (name_base64), the
// convention of this package's records, of `sluice state dump` and of the
// files that initialise tables or hold plugin test cases. ok is false when
// neither is given; giving both is an error, as is base64 that does not
// decode. The error names the field.
func DecodeField(name string, text, b64 *string) (b []byte, ok bool, err error) {
	switch {
	case text != nil && b64 != nil:
		return nil, false, fmt.Errorf("%s and %s_base64 are both given: give one", name, name)
	case text != nil:
		return []byte(*text), true, nil
	case b64 != nil:
		b, err := base64.StdEncoding.DecodeString(*b64)
		if err != nil {
			return nil, false, fmt.Errorf("%s_base64 is not standard base64: %w", name, err)
		}
		return b, true, nil
	}
	return nil, false, nil
}
