package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"fsguard/api"
	"fsguard/session"
)

// clients holds one HTTP client per socket path for the whole process, so
// repeated calls reuse one idle connection instead of leaking a transport
// and its connections per call.
var clients sync.Map // socket path -> *http.Client

func clientFor(socket string) *http.Client {
	if c, ok := clients.Load(socket); ok {
		return c.(*http.Client)
	}
	c := &http.Client{
		Timeout: 5 * time.Minute,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", socket)
			},
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       30 * time.Second,
			ExpectContinueTimeout: 5 * time.Second,
		},
	}
	actual, _ := clients.LoadOrStore(socket, c)
	return actual.(*http.Client)
}

// Call sends a request (and a write's content, streamed; nil for none) to
// the daemon at socket and returns its answer.
func Call(socket string, req api.Request, content io.Reader) (session.Output, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return session.Output{}, err
	}
	var body io.Reader = bytes.NewReader(append(line, '\n'))
	if content != nil {
		body = io.MultiReader(body, content)
	}
	hr, err := http.NewRequest("POST", "http://fsguard/v1/op", body)
	if err != nil {
		return session.Output{}, err
	}
	hr.Header.Set("Content-Type", "application/x-fsguard-request")
	if content != nil {
		// A refused caller learns it before sending the content.
		hr.Header.Set("Expect", "100-continue")
	}
	resp, err := clientFor(socket).Do(hr)
	if err != nil {
		return session.Output{}, fmt.Errorf("cannot reach the fsguard daemon at %s: %v", socket, err)
	}
	defer resp.Body.Close()
	var out session.Output
	derr := json.NewDecoder(resp.Body).Decode(&out)
	io.Copy(io.Discard, resp.Body) // drained, so the connection is reused
	switch {
	case resp.StatusCode == http.StatusForbidden && derr == nil && out.Exit != 0:
		return out, nil // refused at accept, with the reason
	case resp.StatusCode != http.StatusOK:
		return session.Output{}, fmt.Errorf("fsguard daemon at %s answered %s", socket, resp.Status)
	case derr != nil:
		return session.Output{}, fmt.Errorf("bad answer from the fsguard daemon: %v", derr)
	}
	return out, nil
}
