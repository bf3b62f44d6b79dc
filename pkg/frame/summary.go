package frame

import (
	"time"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
)

// Summary is what encoding a query's other frames did, for the stats of the
// frame that carries the query's stats (see Encoder.Append).
type Summary struct {
	Frames              int
	RawBytes, WireBytes int64
	Encode              time.Duration
	// Body buffers (not empty) compressed, stored raw after trying (or
	// with codec none) and stored raw without trying.
	Compressed, Raw, Skipped int
	// ByCodec counts the frames by the codec their batch declares, indexed
	// by codec.Kind (codec auto shows here what it chose).
	ByCodec [codec.Auto]int
}

// Add adds what encoding one frame did.
func (s *Summary) Add(st arrowipc.BodyStats, took time.Duration) {
	s.Frames++
	s.RawBytes += st.RawBytes
	s.WireBytes += st.WireBytes
	s.Encode += took
	s.Compressed += st.Compressed
	s.Skipped += st.Skipped
	s.Raw += st.Buffers - st.Compressed - st.Skipped
	if int(st.Codec) < len(s.ByCodec) {
		s.ByCodec[st.Codec]++
	}
}
