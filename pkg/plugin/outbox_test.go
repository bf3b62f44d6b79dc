package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
)

func testChunk(id string) *chunk {
	return &chunk{msg: &pluginv2.QueryChunkedDataResponse{FrameId: id}}
}

// The sources wait while MaxUnsent bytes wait to be sent, and go on as the
// sender catches up; every chunk is sent in order and released once.
func TestOutboxHoldsTheSourcesBackNotTheWorkers(t *testing.T) {
	released := map[string]int{}
	box := newOutbox(func(q queued) { released[q.c.msg.FrameId]++ }, t.Logf)
	gate := make(chan struct{})
	var sent []string
	done := make(chan error, 1)
	go func() {
		done <- box.run(func(c *chunk) error {
			<-gate // the client reads when the test says so
			sent = append(sent, c.msg.FrameId)
			return nil
		}, func(err error) { t.Errorf("failed(%v) after no failed send", err) })
	}()

	box.put(queued{c: testChunk("0"), held: MaxUnsent / 2})
	if err := box.room(context.Background()); err != nil {
		t.Fatal(err)
	}
	box.put(queued{c: testChunk("1"), held: MaxUnsent / 2}) // a put never waits, full or not
	waited := make(chan error, 1)
	go func() { waited <- box.room(context.Background()) }()
	select {
	case err := <-waited:
		t.Fatalf("room returned %v with %d bytes unsent", err, MaxUnsent)
	default:
	}
	gate <- struct{}{} // one chunk goes out: room again
	if err := <-waited; err != nil {
		t.Fatal(err)
	}

	cctx, cancel := context.WithCancelCause(context.Background())
	box.put(queued{c: testChunk("2"), held: MaxUnsent})
	cause := errors.New("the request ended")
	cancel(cause)
	if err := box.room(cctx); !errors.Is(err, cause) {
		t.Errorf("room with a full backlog and an ended request = %v, want its cause", err)
	}
	box.close()
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := []string{"0", "1", "2"}; len(sent) != 3 || sent[0] != want[0] || sent[1] != want[1] || sent[2] != want[2] {
		t.Errorf("sent %v, want %v", sent, want)
	}
	for _, id := range []string{"0", "1", "2"} {
		if released[id] != 1 {
			t.Errorf("chunk %s released %d times, want once", id, released[id])
		}
	}
}

// After a failed send, the chunks queued and those put later are released
// unsent, room returns the failure, and failed is told once.
func TestOutboxAfterAFailedSend(t *testing.T) {
	released := map[string]int{}
	var mu = make(chan struct{}, 1)
	box := newOutbox(func(q queued) {
		mu <- struct{}{}
		released[q.c.msg.FrameId]++
		<-mu
	}, t.Logf)
	broken := errors.New("client gone")
	var failures []error
	calls := 0
	gate := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- box.run(func(c *chunk) error {
			calls++
			<-gate
			return broken
		}, func(err error) { failures = append(failures, err) })
	}()
	box.put(queued{c: testChunk("0"), held: MaxUnsent})
	box.put(queued{c: testChunk("1"), held: 10})
	close(gate)
	if err := box.room(context.Background()); !errors.Is(err, broken) {
		t.Errorf("room after the failed send = %v, want it", err)
	}
	box.put(queued{c: testChunk("2"), held: 10})
	box.close()
	if err := <-done; !errors.Is(err, broken) {
		t.Errorf("run = %v, want the failed send's error", err)
	}
	if calls != 1 {
		t.Errorf("send called %d times, want once: nothing is sent after a failure", calls)
	}
	if len(failures) != 1 || !errors.Is(failures[0], broken) {
		t.Errorf("failed told %v, want the failure once", failures)
	}
	for _, id := range []string{"0", "1", "2"} {
		if released[id] != 1 {
			t.Errorf("chunk %s released %d times, want once", id, released[id])
		}
	}
	if box.unsent != 0 {
		t.Errorf("%d bytes left unsent after run returned", box.unsent)
	}
}

// A send that panics fails the request like a failed send: the process
// goes on, and what is queued is released.
func TestOutboxSendPanics(t *testing.T) {
	released := 0
	box := newOutbox(func(queued) { released++ }, t.Logf)
	box.put(queued{c: testChunk("0"), held: 1})
	box.put(queued{c: testChunk("1"), held: 1})
	box.close()
	var failed error
	err := box.run(func(*chunk) error { panic("a codec bug") }, func(err error) { failed = err })
	if err == nil || failed == nil || !strings.Contains(err.Error(), "internal error in Quiver while sending a chunk: a codec bug") {
		t.Errorf("run = %v, failed told %v: want the panic as the request's error", err, failed)
	}
	if released != 2 || box.unsent != 0 {
		t.Errorf("%d of 2 chunks released, %d bytes unsent", released, box.unsent)
	}
}
