package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/rpc"
)

// reflected is one service a server reflected (rpc.Reflect), its schema
// parsed: f and in are nil when it gave none or err says why its schema
// cannot be used.
type reflected struct {
	name    string // as mounted; the server's text: print it with printable
	base    uint32
	methods uint32
	f       *schema.File
	in      *schema.Interface
	err     error
	// bad: the server gave a schema that cannot be used (err says why),
	// not none.
	bad bool
}

// maxReflectedName is how much of a service's name (the server's text)
// a message quotes.
const maxReflectedName = 128

// shownName is the service's name for the terminal: cut, and quoted when
// it holds what is not printable.
func (r *reflected) shownName() string {
	n := r.name
	if len(n) > maxReflectedName {
		n = n[:maxReflectedName] + fmt.Sprintf("... (%d bytes)", len(r.name))
	}
	return printable(n)
}

// parseReflected parses the schema of every service svcs lists, with the
// schema parser's own limits (the answer was at most a frame: 16 MiB), and
// checks that it declares the service's interface with as many methods
// as the server mounted.
func parseReflected(svcs []rpc.ReflectedService) []*reflected {
	out := make([]*reflected, 0, len(svcs))
	for _, sv := range svcs {
		r := &reflected{name: sv.Name, base: sv.Base, methods: sv.Methods}
		out = append(out, r)
		if sv.Schema == "" {
			r.err = fmt.Errorf("service %s was mounted without a schema (rpc.WithSchema): pass -schema FILE (and -at %d)", r.shownName(), r.base)
			continue
		}
		r.bad = true
		f, err := schema.Parse("schema of "+r.shownName(), []byte(sv.Schema))
		if err != nil {
			r.err = fmt.Errorf("the server's schema of service %s does not parse: %v", r.shownName(), err)
			continue
		}
		for _, in := range f.Interfaces {
			if callServiceName(f, in) == sv.Name {
				r.in = in
			}
		}
		switch {
		case r.in == nil:
			r.err = fmt.Errorf("the server's schema of service %s declares no interface of that name", r.shownName())
		case uint32(len(r.in.Methods)) != sv.Methods:
			r.err = fmt.Errorf("the server's schema of service %s declares %d methods; the server mounted %d", r.shownName(), len(r.in.Methods), sv.Methods)
			r.in = nil
		default:
			r.f, r.bad = f, false
		}
	}
	return out
}

// reflectList prints what -list prints for a schema, for each service the
// server reflected, with the ordinals it serves them at (its mount
// offset included); a service mounted without a schema gets a line
// saying so, one whose schema cannot be used a line on stdout and why on
// stderr. It returns false when some schema could not be used.
func reflectList(stdout, stderr io.Writer, rs []*reflected) bool {
	var b bytes.Buffer
	ok := true
	if len(rs) == 0 {
		b.WriteString("(no service is mounted)\n")
	}
	for _, r := range rs {
		b.WriteString(r.shownName())
		if r.base != 0 {
			fmt.Fprintf(&b, "  # mounted at %d", r.base)
		}
		b.WriteString("\n")
		switch {
		case r.bad:
			fmt.Fprintf(&b, "  (a schema that cannot be used: %d methods, ordinals %d..%d)\n", r.methods, uint64(r.base)+1, uint64(r.base)+uint64(r.methods))
			fmt.Fprintf(stderr, "zapcodec call: %v\n", r.err)
			ok = false
		case r.in == nil:
			fmt.Fprintf(&b, "  (no schema: %d methods, ordinals %d..%d)\n", r.methods, uint64(r.base)+1, uint64(r.base)+uint64(r.methods))
		default:
			listMethods(&b, r.in, r.base)
		}
	}
	stdout.Write(b.Bytes())
	return ok
}

// reflectFindMethod finds the method name names among the services rs:
// "Service.method" (the service as mounted, "greet.Greeter", or its
// interface's name alone, "Greeter"), or "method" when one service has
// it. When there is none, or the service has no usable schema, its error
// says why and suggests close names, and bad is true when the server's
// schema of the service named is what failed.
func reflectFindMethod(rs []*reflected, name string) (r *reflected, m *schema.Method, bad bool, err error) {
	svc, meth, qualified := "", name, false
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		svc, meth, qualified = name[:i], name[i+1:], true
	}
	type hit struct {
		r *reflected
		m *schema.Method
	}
	var hits []hit
	var unusable *reflected
	for _, r := range rs {
		if qualified && r.name != svc && (r.in == nil || r.in.Name != svc) {
			continue
		}
		if r.in == nil {
			if qualified {
				unusable = r
			}
			continue
		}
		if m := r.in.Method(meth); m != nil {
			hits = append(hits, hit{r, m})
		}
	}
	switch {
	case len(hits) == 1:
		return hits[0].r, hits[0].m, false, nil
	case len(hits) > 1:
		var names []string
		for _, h := range hits {
			names = append(names, h.r.shownName()+"."+meth)
		}
		return nil, nil, false, fmt.Errorf("more than one service has it (%s): name the service", strings.Join(names, ", "))
	case unusable != nil:
		return nil, nil, unusable.bad, unusable.err
	}
	// Close names: a small edit distance from the full name, or from the
	// method's name alone when the service was not given.
	var all, near []string
	want := strings.ToLower(name)
	for _, r := range rs {
		if r.in == nil {
			continue
		}
		for _, m := range r.in.Methods {
			full := r.name + "." + m.Name
			all = append(all, printable(full))
			if len(want) > 256 || len(full) > 256 {
				continue // no name is that long: spare the distances
			}
			cand := strings.ToLower(full)
			if !qualified {
				cand = strings.ToLower(m.Name)
			} else if strings.Count(svc, ".") < strings.Count(r.name, ".") {
				cand = strings.ToLower(r.in.Name + "." + m.Name) // "Greeter.helo"
			}
			if d := editDistance(want, cand); d <= max(2, len(want)/3) {
				near = append(near, printable(full))
			}
		}
	}
	if len(near) > 0 {
		return nil, nil, false, fmt.Errorf("the server has no such method; did you mean %s?", strings.Join(near, " or "))
	}
	if len(all) == 0 {
		return nil, nil, false, errors.New("the server reflects no service with a usable schema")
	}
	sort.Strings(all)
	if len(all) > 12 {
		all = append(all[:12], "...")
	}
	return nil, nil, false, fmt.Errorf("the server has no such method (it has %s; zapcodec call -list ADDR shows them)", strings.Join(all, ", "))
}

// reflectFailed reports why the reflection call failed and returns the
// exit status: 2 for a server that does not serve reflection (the fix is
// -schema), 1 for another status it answered, 3 when no answer came or
// it was not a reflection answer.
func reflectFailed(ctx context.Context, stderr io.Writer, cf *callFlags, addr string, sniff *tlsSniffer, err error) int {
	var se *rpc.StatusError
	switch {
	case rpc.IsNoSuchMethod(err):
		fmt.Fprintf(stderr, "zapcodec call: the server at %s does not serve reflection (rpc.WithReflection); pass -schema FILE\n", addr)
		return callExitUsage
	case errors.As(err, &se):
		fmt.Fprintf(stderr, "zapcodec call: reflection: status %d: %s\n", se.Code, printable(se.Message))
		return callExitStatus
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "zapcodec call: interrupted: %v\n", err)
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(stderr, "zapcodec call: no answer to the reflection call (the server's schemas) within %v\n", reflectBound(cf))
	default:
		fmt.Fprintf(stderr, "zapcodec call: asking the server for its schemas (reflection): %v\n", cf.tls.explain(err, sniff))
	}
	return callExitFailed
}

// reflectBound is the bound on the dial and the reflection call: -timeout,
// or the dial's own bound when it is 0.
func reflectBound(cf *callFlags) string {
	if cf.timeout > 0 {
		return fmt.Sprintf("-timeout %v", cf.timeout)
	}
	return fmt.Sprintf("%v, the bound of a dial given no -timeout", callDialTimeout)
}
