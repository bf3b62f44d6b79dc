package plugin

import (
	"context"
	"sync"

	"github.com/quiverdata/quiver/pkg/pipeline"
)

// MaxUnsent bounds the encoded bytes of one chunked request that wait to be
// sent: while more wait, the request's sources hold their next frame back
// (outbox.room). A client that stops reading so holds up its own request
// until its deadline, with at most this much waiting to be sent. What its
// queries hold besides (the frames on an encode worker, and a table frame's
// parts until the frame is finished) is bounded by its share of the memory
// budget, not by this; frames encoded ahead of an earlier frame of their
// query, which wait for it to be sent after it (inOrder), count in this.
const MaxUnsent = 8 << 20

// outbox passes a chunked request's chunks from the encode workers, which
// must never wait on a client, to the one goroutine that sends them (run).
// Putting never blocks; the request's sources wait for room instead.
type outbox struct {
	mu      sync.Mutex
	queue   []queued
	unsent  int64         // bytes queued or being sent
	closed  bool          // no more puts: run returns once the queue is empty
	err     error         // the first failed send: later chunks are dropped
	changed chan struct{} // closed, and replaced, when any of the above moves
	release func(queued)  // gives back what a chunk holds, sent or not
	// logError logs a panic while sending, with the request's log
	// attributes.
	logError func(msg string, args ...any)
}

// queued is one chunk and the budget bytes it holds until sent.
type queued struct {
	c    *chunk
	held int64
}

func newOutbox(release func(queued), logError func(msg string, args ...any)) *outbox {
	return &outbox{changed: make(chan struct{}), release: release, logError: logError}
}

// signal wakes whoever waits on the current state; called under o.mu.
func (o *outbox) signal() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// put queues a chunk for run to send, or releases it at once after a failed
// send.
func (o *outbox) put(q queued) {
	o.owe(q.held)
	o.putOwed(q)
}

// owe counts n bytes of a chunk not queued yet, as it waits for an earlier
// frame of its query to be encoded (inOrder), as waiting to be sent: room
// holds the request's sources back for them as for the queued chunks, so
// that frames encoded ahead of a slow one do not pile up past MaxUnsent.
// The chunk is then queued with putOwed.
func (o *outbox) owe(n int64) {
	o.mu.Lock()
	o.unsent += n
	metricUnsent.Add(float64(n))
	o.mu.Unlock()
}

// putOwed is put for a chunk whose bytes owe counted.
func (o *outbox) putOwed(q queued) {
	o.mu.Lock()
	if o.err != nil {
		o.unsent -= q.held
		metricUnsent.Sub(float64(q.held))
		o.signal()
		o.mu.Unlock()
		o.release(q)
		return
	}
	o.queue = append(o.queue, q)
	o.signal()
	o.mu.Unlock()
}

// room waits until fewer than MaxUnsent bytes wait to be sent, and returns
// the failed send's error, or the context's cause.
func (o *outbox) room(ctx context.Context) error {
	for {
		o.mu.Lock()
		err, full, changed := o.err, o.unsent >= MaxUnsent, o.changed
		o.mu.Unlock()
		if err != nil || !full {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// close says no more chunks come: run returns once it has sent the rest.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.signal()
	o.mu.Unlock()
}

// run sends the chunks with send, in the order they were put, until the
// outbox is closed and empty, and returns the first failed send's error.
// After a failure it releases the chunks unsent, and calls failed once.
func (o *outbox) run(send func(*chunk) error, failed func(error)) error {
	for {
		o.mu.Lock()
		for len(o.queue) == 0 && !o.closed {
			changed := o.changed
			o.mu.Unlock()
			<-changed
			o.mu.Lock()
		}
		if len(o.queue) == 0 {
			err := o.err
			o.mu.Unlock()
			return err
		}
		q := o.queue[0]
		o.queue[0] = queued{}
		o.queue = o.queue[1:]
		err := o.err
		o.mu.Unlock()

		if err == nil {
			err = sendRecovering(o.logError, send, q.c)
		}
		o.release(q)

		o.mu.Lock()
		o.unsent -= q.held
		metricUnsent.Sub(float64(q.held))
		first := err != nil && o.err == nil
		if first {
			o.err = err
		}
		o.signal()
		o.mu.Unlock()
		if first {
			failed(err)
		}
	}
}

// sendRecovering is send(c), a panic turned into its error (and logged):
// it fails the request, not the process.
func sendRecovering(logError func(msg string, args ...any), send func(*chunk) error, c *chunk) (err error) {
	defer pipeline.Recover(&err, logError, "panic sending a chunk", c.msg.GetRefId(), " while sending a chunk")
	return send(c)
}
