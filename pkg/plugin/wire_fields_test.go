package plugin

import (
	"fmt"
	"slices"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The messages wireCodec writes have exactly the fields it writes: a field
// an SDK upgrade adds to one of them would otherwise be dropped from every
// answer without an error. The list is the codec's (wire.go); this test
// fails until the codec writes a new field and the list says so.
func TestWireCodecKnowsEveryField(t *testing.T) {
	for _, tc := range []struct {
		msg  protoreflect.ProtoMessage
		want []string
	}{
		{&pluginv2.QueryDataResponse{}, []string{
			fmt.Sprint(fieldResponses, " responses map"),
		}},
		{&pluginv2.DataResponse{}, []string{
			fmt.Sprint(fieldFrames, " frames bytes repeated"),
			fmt.Sprint(fieldError, " error string"),
			fmt.Sprint(fieldJSONMeta, " jsonMeta bytes"),
			fmt.Sprint(fieldStatus, " status int32"),
			fmt.Sprint(fieldErrorSource, " errorSource string"),
			fmt.Sprint(fieldFormat, " format enum"),
		}},
		{&pluginv2.QueryChunkedDataResponse{}, []string{
			fmt.Sprint(chunkRefID, " refId string"),
			fmt.Sprint(chunkFrameID, " frameId string"),
			fmt.Sprint(chunkFrame, " frame bytes"),
			fmt.Sprint(chunkError, " error string"),
			fmt.Sprint(chunkStatus, " status int32"),
			fmt.Sprint(chunkErrorSource, " errorSource string"),
			fmt.Sprint(chunkFormat, " format enum"),
		}},
	} {
		d := tc.msg.ProtoReflect().Descriptor()
		var got []string
		for i := range d.Fields().Len() {
			f := d.Fields().Get(i)
			s := fmt.Sprint(f.Number(), " ", f.JSONName(), " ", f.Kind())
			switch {
			case f.IsMap():
				s = fmt.Sprint(f.Number(), " ", f.JSONName(), " map")
				if k, v := f.MapKey().Kind(), f.MapValue(); k != protoreflect.StringKind || v.Message() == nil || v.Message().FullName() != "pluginv2.DataResponse" {
					t.Errorf("%s: map %s of %s to %v: the codec writes string keys and DataResponse values", d.FullName(), f.Name(), k, v.Kind())
				}
			case f.IsList():
				s += " repeated"
			}
			got = append(got, s)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s has fields %q; wireCodec writes %q: teach wire.go the change", d.FullName(), got, tc.want)
		}
	}
}
