package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

func init() {
	register(&command{
		name:    "health",
		summary: "ask a ZAP-RPC server for its health (exit 0 when serving)",
		usage: `  zapcodec health -addr ADDR [-service NAME] [TLS flags]
    Calls the health service of a zapcodec rpc server (method
    rpc.HealthMethod) and prints the status on one line: serving, not
    serving, draining (the server began shutting down while the check was
    under way; a server already shutting down has closed its listener and
    refuses the dial) or unknown (its status was set so, no such service,
    a server that cannot be reached, or a check that failed or went
    unanswered; the error goes to stderr).
    Exits 0 when serving, 1 for every other status (unknown included,
    whether the dial or the check failed), 2 on bad usage (which prints
    no status). For load balancer and container health probes.
  -addr ADDR          server address (a socket path with -network unix)
  -network NET        tcp or unix (default tcp)
  -service NAME       a mounted service, e.g. eth.Eth (default: the server
                      as a whole)
  -timeout D          bound on the dial and the call (default 5s)
` + tlsUsage,
		run: runHealth,
	})
}

func runHealth(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "server address")
	network := fs.String("network", "tcp", "tcp or unix")
	service := fs.String("service", "", "service name (default: the whole server)")
	timeout := fs.Duration("timeout", 5*time.Second, "bound on the dial and the call")
	var tf tlsFlags
	tf.register(fs)
	fs.Usage = func() { fmt.Fprint(stderr, "usage:\n"+commands["health"].usage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *addr == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "zapcodec health: -addr is required and takes no other arguments")
		fs.Usage()
		return 2
	}
	if err := oneAddress(*addr); err != nil && *network != "unix" {
		fmt.Fprintf(stderr, "zapcodec health: -addr %v\n", err)
		return 2
	}
	if *network != "tcp" && *network != "unix" {
		fmt.Fprintf(stderr, "zapcodec health: -network %q: want tcp or unix\n", *network)
		return 2
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "zapcodec health: -timeout must be positive")
		return 2
	}
	tlsCfg, err := tf.config(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "zapcodec health: %v\n", err)
		return 2
	}
	opts, sniff := tf.clientOptions(tlsCfg)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c, err := rpc.Dial(ctx, *network, *addr, opts...)
	if err != nil {
		err = tf.explainDial(err)
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("not connected within -timeout %v (%w)", *timeout, err)
		}
		// A server that cannot be reached is as unknown as one that does
		// not answer: the same line and exit code, so a probe that reads
		// stdout sees a status whichever step failed.
		fmt.Fprintf(stdout, "%s\n", rpc.HealthUnknown)
		fmt.Fprintf(stderr, "zapcodec health: %v\n", err)
		return 1
	}
	defer c.Close()
	st, err := rpc.CheckHealth(ctx, c, *service)
	if err != nil {
		err = tf.explain(err, sniff)
		fmt.Fprintf(stdout, "%s\n", rpc.HealthUnknown)
		fmt.Fprintf(stderr, "zapcodec health: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", st)
	if st != rpc.HealthServing {
		return 1
	}
	return 0
}

// oneAddress refuses a cluster target ("dns:///name:port") where a
// command dials one address, which net.Dial would refuse with "too many
// colons in address".
func oneAddress(addr string) error {
	scheme, _, ok := strings.Cut(addr, "://")
	if !ok {
		return nil
	}
	return fmt.Errorf("%s: a cluster target (%s://); this command dials one address, host:port (zapcodec load takes cluster targets)", addr, scheme)
}
