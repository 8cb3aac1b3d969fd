package observability

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/zapcodec/zapcodec/rpc"
)

// Metrics are the Prometheus metrics of the calls an rpc.Observer sees,
// labelled by side ("client" or "server") and method (the wire ordinal, or
// the name MethodName gives).
type Metrics struct {
	Calls    *prometheus.CounterVec   // zaprpc_calls_total{side,method,status}
	Duration *prometheus.HistogramVec // zaprpc_call_duration_seconds{side,method}
	BytesIn  *prometheus.CounterVec   // zaprpc_payload_bytes_received_total{side,method}
	BytesOut *prometheus.CounterVec   // zaprpc_payload_bytes_sent_total{side,method}

	// MethodName names a method ordinal for the method label; nil: its
	// decimal ordinal. Keep the set of names small (one per method). For
	// a server's metrics, the server's own (*rpc.Server).MethodName gives
	// "/pkg.Service/method" for the services generated Register…Server
	// functions mounted ("" for others).
	MethodName func(method uint32) string
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "zaprpc_calls_total",
			Help: "ZAP-RPC calls finished, by side, method and answer status (0: no answer).",
		}, []string{"side", "method", "status"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "zaprpc_call_duration_seconds",
			Help:    "ZAP-RPC call duration: the handler on a server, the round trip on a client.",
			Buckets: prometheus.ExponentialBuckets(10e-6, 4, 10), // 10 µs .. 2.6 s
		}, []string{"side", "method"}),
		BytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "zaprpc_payload_bytes_received_total",
			Help: "Payload bytes received (request on a server, answer on a client).",
		}, []string{"side", "method"}),
		BytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "zaprpc_payload_bytes_sent_total",
			Help: "Payload bytes sent (answer on a server, request on a client).",
		}, []string{"side", "method"}),
	}
	reg.MustRegister(m.Calls, m.Duration, m.BytesIn, m.BytesOut)
	return m
}

// Observe is an rpc.Observer: install it with rpc.WithObserver(m.Observe)
// on a server, a client or both.
func (m *Metrics) Observe(ev rpc.CallEvent) {
	side := "server"
	if ev.Client {
		side = "client"
	}
	method := m.methodName(ev.Method)
	m.Calls.WithLabelValues(side, method, strconv.FormatUint(uint64(ev.Status), 10)).Inc()
	m.Duration.WithLabelValues(side, method).Observe(ev.Duration.Seconds())
	m.BytesIn.WithLabelValues(side, method).Add(float64(ev.BytesIn))
	m.BytesOut.WithLabelValues(side, method).Add(float64(ev.BytesOut))
}

func (m *Metrics) methodName(method uint32) string {
	if m.MethodName != nil {
		return m.MethodName(method)
	}
	return strconv.FormatUint(uint64(method), 10)
}

// Span attribute keys (OpenTelemetry RPC semantic conventions).
const (
	attrSystem = attribute.Key("rpc.system")
	attrMethod = attribute.Key("rpc.method")
	attrStatus = attribute.Key("rpc.zap.status_code")
)

// traceContext carries a span context in the W3C traceparent and
// tracestate keys of a call's metadata.
var traceContext = propagation.TraceContext{}

// ServerTracing returns an interceptor that runs each call in a server
// span named name(method) (default "zaprpc/<ordinal>"), recording the
// answer's status and marking errors. When the call's metadata carries a
// W3C traceparent (ClientTracing puts one there), the span is a child of
// the caller's span, in the same trace.
func ServerTracing(tp trace.TracerProvider, name func(method uint32) string) rpc.Interceptor {
	tracer := tp.Tracer("github.com/zapcodec/zapcodec/rpc")
	return func(ctx context.Context, method uint32, req, resp []byte, next rpc.Handler) ([]byte, error) {
		ctx = traceContext.Extract(ctx, metadataCarrier{rpc.MetadataFrom(ctx)})
		ctx, span := tracer.Start(ctx, spanName(name, method), trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attrSystem.String("zap"), attrMethod.Int64(int64(method))))
		out, err := next(ctx, req, resp)
		end(span, err)
		return out, err
	}
}

// ClientTracing returns a client interceptor that runs each call in a
// client span (a child of the span in the caller's ctx, if any) and sends
// the span's context to the server in the call's metadata (W3C
// traceparent, and tracestate when there is one).
func ClientTracing(tp trace.TracerProvider, name func(method uint32) string) rpc.ClientInterceptor {
	tracer := tp.Tracer("github.com/zapcodec/zapcodec/rpc")
	return func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
		ctx, span := tracer.Start(ctx, spanName(name, method), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attrSystem.String("zap"), attrMethod.Int64(int64(method))))
		carrier := propagation.MapCarrier{}
		traceContext.Inject(ctx, carrier)
		for k, v := range carrier {
			ctx = rpc.WithMetadata(ctx, k, v)
		}
		out, err := invoke(ctx, method, req, resp)
		end(span, err)
		return out, err
	}
}

// metadataCarrier reads a call's metadata as an OpenTelemetry
// TextMapCarrier (extraction only: a server does not write metadata).
type metadataCarrier struct{ md rpc.Metadata }

func (c metadataCarrier) Get(key string) string { return string(c.md.Get(key)) }

func (c metadataCarrier) Set(string, string) {}

func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, c.md.Len())
	c.md.Range(func(k, _ []byte) bool {
		keys = append(keys, string(k))
		return true
	})
	return keys
}

func spanName(name func(uint32) string, method uint32) string {
	if name != nil {
		return name(method)
	}
	return "zaprpc/" + strconv.FormatUint(uint64(method), 10)
}

// end records the call's status on span and ends it.
func end(span trace.Span, err error) {
	span.SetAttributes(attrStatus.Int64(int64(rpc.Code(err))))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
