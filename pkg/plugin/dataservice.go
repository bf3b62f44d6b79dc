package plugin

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// The Data service is registered with a descriptor of its own, dataService,
// instead of the SDK's generated pluginv2.Data_ServiceDesc: the same service,
// methods and request types, so Grafana's client cannot tell them apart, but
// its handlers hand gRPC Quiver's own message types, reply and chunk. Those
// carry the frames kept in pieces (a table's parts, a lent record's
// buffers) beside the protobuf message, and the wire codec (wire.go) writes
// them, and only them, with the pieces referenced where each frame goes.
// Nothing has to look up what a message owns.
//
// gRPC hands a handler's message to the codec before it writes anything and
// frees the buffers the codec returned once written or failed
// (ServerStream.SendMsg, which a unary reply goes through too in grpc-go
// v1.85), so a lent record referenced by a reply or a chunk is released on
// every path: by the buffer the codec wraps its last piece in
// (wireWriter.frame), by the codec itself when it writes the message some
// other way, or by the caller when no message is sent (reply, and
// queryChunkedData's send).
//
// What else sees these messages: the SDK's interceptors (request metrics,
// panic recovery) pass them on without reading them, OpenTelemetry's stats
// handler reads none of an outgoing payload, and gRPC's binary logging (off
// unless GRPC_BINARY_LOG_FILTER is set) logs the bytes the codec wrote, so
// it logs these as it logs any message.

// dataServer is what dataService's handlers call.
type dataServer interface {
	// reply answers a QueryData request.
	reply(ctx context.Context, req *pluginv2.QueryDataRequest) (*reply, error)
	// chunks answers a QueryChunkedData request, sending chunks on ss.
	chunks(req *pluginv2.QueryChunkedDataRequest, ss grpc.ServerStream) error
}

var dataService = grpc.ServiceDesc{
	ServiceName: "pluginv2.Data",
	HandlerType: (*dataServer)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "QueryData", Handler: queryDataHandler}},
	Streams: []grpc.StreamDesc{
		{StreamName: "QueryChunkedData", Handler: queryChunkedDataHandler, ServerStreams: true},
	},
	Metadata: "backend.proto",
}

func queryDataHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(pluginv2.QueryDataRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	answer := func(ctx context.Context, req any) (any, error) {
		return srv.(dataServer).reply(ctx, req.(*pluginv2.QueryDataRequest))
	}
	if interceptor == nil {
		return answer(ctx, in)
	}
	return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: pluginv2.Data_QueryData_FullMethodName}, answer)
}

func queryChunkedDataHandler(srv any, ss grpc.ServerStream) error {
	in := new(pluginv2.QueryChunkedDataRequest)
	if err := ss.RecvMsg(in); err != nil {
		return err
	}
	return srv.(dataServer).chunks(in, ss)
}

// dataPlugin serves dataService as go-plugin's "data" plugin.
type dataPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	srv dataServer
}

var _ goplugin.GRPCPlugin = (*dataPlugin)(nil)

func (p *dataPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&dataService, p.srv)
	return nil
}

func (p *dataPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("plugin: the data plugin is served here, not called")
}

// outgoing is a message on its way to gRPC, whose frames hold each frame's
// first piece, with the pieces after those (nil when no frame has more
// than one) and what to do once its frames are written out (give their
// budget back): a reply answers one QueryData request, a chunk is one
// QueryChunkedData message.
type outgoing[M any] struct {
	msg     M
	rest    *tails
	written *afterWrite
}

type (
	reply = outgoing[*pluginv2.QueryDataResponse]
	chunk = outgoing[*pluginv2.QueryChunkedDataResponse]
)

// once holds a value for whoever takes it first: the wire codec that
// writes a message, or the caller that learns it never will be written.
type once[T any] struct {
	taken atomic.Bool
	v     T
}

// take returns the value once (the zero value afterwards, and for nil o).
func (o *once[T]) take() (v T) {
	if o != nil && o.taken.CompareAndSwap(false, true) {
		v, o.v = o.v, v
	}
	return v
}

// afterWrite is what to do once gRPC is done with a reply's or a chunk's
// frames (give their budget back), for whoever takes it first: the wire
// codec, which runs it when the transport frees the message's last pooled
// buffer, having written everything before it (or at once when there is
// none), or the caller that learns the codec never will (another codec
// marshalled a copy, nothing was sent, the request ended).
type afterWrite = once[func()]

func newAfterWrite(fn func()) *afterWrite { return &afterWrite{v: fn} }

// runAfterWrite runs a's function, unless it was taken.
func runAfterWrite(a *afterWrite) {
	if fn := a.take(); fn != nil {
		fn()
	}
}

// tails holds the pieces after the first of some frames, and their lent
// records (once).
type tails = once[piecedFrames]

func newTails(frames piecedFrames) *tails {
	if len(frames) == 0 {
		return nil
	}
	return &tails{v: frames}
}
