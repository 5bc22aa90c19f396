package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxFrame bounds one inbound JSON-RPC line (a write's content included).
const MaxFrame = 80 << 20

// Transport is newline-delimited JSON-RPC over a reader and a writer (stdin
// and stdout) that survives bad input: the SDK's own stdio transport ends
// the whole connection on one malformed line. Here a line that is not JSON
// gets a JSON-RPC parse error (-32700), one that is not a JSON-RPC message an
// invalid-request error (-32600), a line over Max bytes is skipped with an
// error; the session goes on with the next line.
type Transport struct {
	In  io.Reader
	Out io.Writer
	Max int // 0: MaxFrame
}

// Connect implements mcp.Transport.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	max := t.Max
	if max <= 0 {
		max = MaxFrame
	}
	c := &lineConn{out: t.Out, incoming: make(chan inbound), closed: make(chan struct{})}
	go c.readLoop(bufio.NewReaderSize(t.In, 64<<10), max)
	return c, nil
}

type inbound struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	mu        sync.Mutex // one writer at a time: frames never interleave
	out       io.Writer
	incoming  chan inbound
	closed    chan struct{}
	closeOnce sync.Once
	// calls counts the requests read and not yet answered: at the end
	// of input, the end is told only once they are (inFlight), so a
	// client that sends its requests and closes stdin gets every answer.
	calls    sync.WaitGroup
	answered sync.Map // request id -> struct{}, until its response is written
}

// drainBound is how long the end of input waits for answers to the
// requests in flight; each request is bounded in time on its own, so
// this only guards against one that is not.
const drainBound = 2 * time.Minute

var errTooLarge = errors.New("frame too large")

func (c *lineConn) readLoop(r *bufio.Reader, max int) {
	for {
		line, err := readFrame(r, max)
		if errors.Is(err, errTooLarge) {
			c.sendError(jsonrpc.CodeInvalidRequest, "the message is larger than the server takes in one line; send a smaller one")
			continue
		}
		if err != nil {
			c.inFlight() // io.EOF: the client sent all it will; answer it first
			c.deliver(inbound{err: err})
			return
		}
		if len(line) == 0 {
			continue
		}
		msg, derr := jsonrpc.DecodeMessage(line)
		if derr != nil {
			if json.Valid(line) {
				c.sendError(jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 message: "+derr.Error())
			} else {
				c.sendError(jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
			}
			continue
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			if _, dup := c.answered.LoadOrStore(req.ID, struct{}{}); !dup {
				c.calls.Add(1)
			}
		}
		if !c.deliver(inbound{msg: msg}) {
			return
		}
	}
}

// inFlight waits until every request read has been answered, the
// connection closed, or drainBound passed.
func (c *lineConn) inFlight() {
	done := make(chan struct{})
	go func() { c.calls.Wait(); close(done) }()
	t := time.NewTimer(drainBound)
	defer t.Stop()
	select {
	case <-done:
	case <-c.closed:
	case <-t.C:
	}
}

func (c *lineConn) deliver(in inbound) bool {
	select {
	case c.incoming <- in:
		return true
	case <-c.closed:
		return false
	}
}

// readFrame reads one line without its end, at most max bytes; a longer line
// is read to its end and dropped.
func readFrame(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	over := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !over {
			if len(line)+len(chunk) > max+1 {
				over, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) > 0 && !over:
			return trimEOL(line), nil
		case err != nil:
			return nil, err
		case over:
			return nil, errTooLarge
		}
		return trimEOL(line), nil
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// sendError answers a line that carried no usable request id.
func (c *lineConn) sendError(code int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	c.writeLine(b)
}

func (c *lineConn) writeLine(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.out.Write(append(b, '\n'))
	return err
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case in := <-c.incoming:
		return in.msg, in.err
	}
}

func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	err = c.writeLine(b)
	if res, ok := msg.(*jsonrpc.Response); ok {
		if _, was := c.answered.LoadAndDelete(res.ID); was {
			c.calls.Done()
		}
	}
	return err
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *lineConn) SessionID() string { return "" }
