package observability

import (
	"context"
	"net"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/zapcodec/zapcodec/rpc"
)

const (
	mEcho = 1
	mFail = 2
)

// A server and a client over loopback TCP, both observed into one
// Prometheus registry and traced into one span recorder.
func TestPrometheusAndTracing(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	names := func(method uint32) string {
		switch method {
		case mEcho:
			return "echo"
		case mFail:
			return "fail"
		}
		return "other"
	}
	m.MethodName = names

	s := rpc.NewServer(rpc.WithObserver(m.Observe), rpc.WithInterceptors(ServerTracing(tp, names)))
	s.Handle(mEcho, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if !trace.SpanFromContext(ctx).SpanContext().IsValid() {
			t.Error("handler ctx has no server span")
		}
		return append(resp, req...), nil
	})
	s.Handle(mFail, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return resp, rpc.Errorf(409, "conflict")
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String(),
		rpc.WithObserver(m.Observe), rpc.WithClientInterceptors(ClientTracing(tp, names)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	for i := 0; i < 3; i++ {
		if _, err := c.Call(ctx, mEcho, make([]byte, 10), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Call(ctx, mFail, nil, nil); rpc.Code(err) != 409 {
		t.Fatalf("fail: %v", err)
	}
	parent.End()

	// Metrics.
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, mt := range f.GetMetric() {
				if match(mt, labels) {
					switch {
					case mt.Counter != nil:
						return mt.Counter.GetValue()
					case mt.Histogram != nil:
						return float64(mt.Histogram.GetSampleCount())
					}
				}
			}
		}
		t.Fatalf("no %s%v", name, labels)
		return 0
	}
	for _, side := range []string{"client", "server"} {
		if v := value("zaprpc_calls_total", map[string]string{"side": side, "method": "echo", "status": "200"}); v != 3 {
			t.Errorf("%s echo calls: %v", side, v)
		}
		if v := value("zaprpc_calls_total", map[string]string{"side": side, "method": "fail", "status": "409"}); v != 1 {
			t.Errorf("%s fail calls: %v", side, v)
		}
		if v := value("zaprpc_call_duration_seconds", map[string]string{"side": side, "method": "echo"}); v != 3 {
			t.Errorf("%s echo durations observed: %v", side, v)
		}
		if v := value("zaprpc_payload_bytes_received_total", map[string]string{"side": side, "method": "echo"}); v != 30 {
			t.Errorf("%s echo bytes received: %v", side, v)
		}
		if v := value("zaprpc_payload_bytes_sent_total", map[string]string{"side": side, "method": "echo"}); v != 30 {
			t.Errorf("%s echo bytes sent: %v", side, v)
		}
	}

	// Spans: one client and one server span per call; client spans are
	// children of the caller's span, and each server span a child of a
	// client span (the trace context crossed the wire in the metadata).
	clientIDs := map[trace.SpanID]bool{}
	for _, sp := range sr.Ended() {
		if sp.SpanKind() == trace.SpanKindClient {
			clientIDs[sp.SpanContext().SpanID()] = true
		}
	}
	var clientSpans, serverSpans, failed int
	for _, sp := range sr.Ended() {
		switch sp.SpanKind() {
		case trace.SpanKindClient:
			clientSpans++
			if sp.Parent().SpanID() != parent.SpanContext().SpanID() {
				t.Errorf("client span %s: parent %v, want the caller's span", sp.Name(), sp.Parent().SpanID())
			}
		case trace.SpanKindServer:
			serverSpans++
			if !clientIDs[sp.Parent().SpanID()] || sp.SpanContext().TraceID() != parent.SpanContext().TraceID() {
				t.Errorf("server span %s: parent %v in trace %v, want a client span in the caller's trace %v",
					sp.Name(), sp.Parent().SpanID(), sp.SpanContext().TraceID(), parent.SpanContext().TraceID())
			}
		default:
			continue
		}
		if sp.Name() == "fail" {
			failed++
			if sp.Status().Code != codes.Error {
				t.Errorf("%v span of a 409: status %v", sp.SpanKind(), sp.Status())
			}
			found := false
			for _, a := range sp.Attributes() {
				if a.Key == attrStatus && a.Value.AsInt64() == 409 {
					found = true
				}
			}
			if !found {
				t.Errorf("%v span of a 409: attributes %v", sp.SpanKind(), sp.Attributes())
			}
		}
	}
	if clientSpans != 4 || serverSpans != 4 || failed != 2 {
		t.Errorf("spans: %d client, %d server, %d failed; want 4, 4, 2", clientSpans, serverSpans, failed)
	}
}

func match(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := labels[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(labels)
}
