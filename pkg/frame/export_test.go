package frame

// Test-support functions: only tests call them.

// AppendJSON appends in as the SDK's data-frame JSON to dst with a new
// JSONWriter (see JSONWriter.Append); a caller writing many frames should
// keep a JSONWriter.
func AppendJSON(dst []byte, in Input) ([]byte, error) {
	var w JSONWriter
	return w.Append(dst, in)
}
