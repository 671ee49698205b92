package main

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// startMetrics serves a registry with the Go and process collectors at
// http://addr/metrics for -metrics, and returns it (a nil Registerer when
// addr is ""), the URL it is served at, and the stop to call at the end.
func startMetrics(addr string) (reg prometheus.Registerer, at string, stop func(), err error) {
	if addr == "" {
		return nil, "", func() {}, nil
	}
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bound, stop, err := serveMetrics(addr, r)
	if err != nil {
		return nil, "", nil, err
	}
	return r, "http://" + bound + "/metrics", stop, nil
}

// serveMetrics serves reg at http://<bound>/metrics until the returned stop
// is called; bound is the address actually listened on (addr may use port 0).
func serveMetrics(addr string, reg *prometheus.Registry) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("-metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return ln.Addr().String(), func() {
		_ = srv.Close()
		<-done
	}, nil
}
