package plugin

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc"

	"github.com/quiverdata/quiver/pkg/pipeline"
)

// QueryData is reply with its frames joined, for tests that call the
// service in process.
func (s *Service) QueryData(ctx context.Context, preq *pluginv2.QueryDataRequest) (*pluginv2.QueryDataResponse, error) {
	r, err := s.reply(ctx, preq)
	if err != nil {
		return nil, err
	}
	joinPieced(r.msg, r.rest.take())
	runAfterWrite(r.written)
	return r.msg, nil
}

// QueryChunkedData is chunks with each chunk's frame joined.
func (s *Service) QueryChunkedData(preq *pluginv2.QueryChunkedDataRequest, stream grpc.ServerStreamingServer[pluginv2.QueryChunkedDataResponse]) error {
	return s.chunks(preq, joiningStream{stream})
}

type joiningStream struct {
	grpc.ServerStreamingServer[pluginv2.QueryChunkedDataResponse]
}

func (j joiningStream) SendMsg(m any) error {
	c := m.(*chunk)
	if rest := c.rest.take(); rest != nil {
		c.msg.Frame = pipeline.Frame{B: c.msg.Frame, Rest: rest.of(c.msg.Frame).rest}.Joined()
		rest.release()
	}
	return j.Send(c.msg)
}
