package interrupt

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fault is what the proxy does to one request.
type fault int

const (
	pass      fault = iota // forward to the mock
	delay                  // wait a little, then forward
	hang                   // hold the request until the client gives up
	reset                  // close the connection with a TCP RST
	status500              // answer 500
	status503              // answer 503
	status429              // answer 429 Too Many Requests
	token401               // answer 401 to a request with a token (the token "expired")
	garbage                // answer 200 with a malformed document
	truncated              // answer 200 with the head of a valid-looking document
	numFaults
)

func (f fault) String() string {
	return [...]string{"pass", "delay", "hang", "reset", "500", "503", "429", "token401", "garbage", "truncated"}[f]
}

// metaProxy is a reverse proxy in front of the metadata mock. It counts
// requests per path, can hide the spot/instance-action notice behind a
// gate (answering 404 as the mock does when there is no notice), and can
// inject faults.
type metaProxy struct {
	URL       string
	srv       *httptest.Server
	rp        *httputil.ReverseProxy
	tr        *http.Transport
	closeOnce sync.Once
	choose    func(r *http.Request) fault // nil = always pass
	gated     atomic.Bool                 // true: instance-action answers 404
	opened    atomic.Int64                // UnixNano when the gate opened
	mu        sync.Mutex
	counts    map[string]int  // path -> requests seen
	faults    map[fault]int   // fault -> times injected
	hangCtx   context.Context // ends hung requests at Close
	unhang    context.CancelFunc
}

func newMetaProxy(t testing.TB, target string, choose func(*http.Request) fault) *metaProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &metaProxy{choose: choose, counts: map[string]int{}, faults: map[fault]int{}}
	p.hangCtx, p.unhang = context.WithCancel(context.Background())
	p.rp = httputil.NewSingleHostReverseProxy(u)
	p.tr = &http.Transport{MaxIdleConnsPerHost: 8}
	p.rp.Transport = p.tr
	p.rp.ErrorLog = nil
	p.rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) { w.WriteHeader(http.StatusBadGateway) }
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	t.Cleanup(p.Close)
	return p
}

func (p *metaProxy) Close() { p.closeOnce.Do(p.close) }

func (p *metaProxy) close() {
	p.unhang()
	p.srv.CloseClientConnections()
	p.srv.Close()
	p.tr.CloseIdleConnections()
}

// openGate lets the mock's instance-action through from now on.
func (p *metaProxy) openGate() time.Time {
	now := time.Now()
	p.opened.Store(now.UnixNano())
	p.gated.Store(false)
	return now
}

func (p *metaProxy) count(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[path]
}

func (p *metaProxy) faultCounts() map[fault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[fault]int{}
	for k, v := range p.faults {
		m[k] = v
	}
	return m
}

const notFoundBody = "<html><head><title>404 - Not Found</title></head></html>"

func (p *metaProxy) serve(w http.ResponseWriter, r *http.Request) {
	f := pass
	if p.choose != nil {
		f = p.choose(r)
	}
	if f == token401 && r.Header.Get("X-aws-ec2-metadata-token") == "" {
		f = pass
	}
	p.mu.Lock()
	p.counts[r.URL.Path]++
	if f != pass {
		p.faults[f]++
	}
	p.mu.Unlock()
	switch f {
	case delay:
		time.Sleep(time.Duration(rand.IntN(15)) * time.Millisecond)
	case hang:
		select {
		case <-r.Context().Done():
		case <-p.hangCtx.Done():
		}
		return
	case reset:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
				c.Close()
				return
			}
		}
		w.WriteHeader(http.StatusBadGateway)
		return
	case status500, status503, status429, token401:
		code := map[fault]int{status500: 500, status503: 503, status429: 429, token401: 401}[f]
		http.Error(w, http.StatusText(code), code)
		return
	case garbage:
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, []string{"{\"action\": ", "<html>oops</html>", "[{]", "{\"action\":\"terminate\",\"time\":\"soon\"}", "{\"noticeTime\": 7}", "null"}[rand.IntN(6)])
			return
		}
	case truncated:
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "{\n\t\"action\": \"terminate\",\n\t\"time\": \"2026-")
			return
		}
	}
	if p.gated.Load() && strings.HasSuffix(r.URL.Path, "/"+awsPathInstanceAction) {
		http.Error(w, notFoundBody, http.StatusNotFound)
		return
	}
	p.rp.ServeHTTP(w, r)
}
