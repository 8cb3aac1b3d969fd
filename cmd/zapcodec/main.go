// Command zapcodec works with ZAP schemas, messages and servers. Each
// subcommand lives in its own file and registers itself in commands:
//
//	zapcodec gen [-out DIR] [-package NAME] SCHEMA.zap...   # Go records and RPC stubs
//	zapcodec dump [flags] [FILE]                            # show messages or frames
//	zapcodec call -schema S.zap -method M [-d JSON] ADDR    # one call, JSON in and out
//	zapcodec load [flags]                                   # load-test a ZAP-RPC server
//	zapcodec health -addr ADDR [-service NAME]              # ask a server for its health
//	zapcodec breaking -against OLD.zap NEW.zap...           # changes that break old peers
//
// call, load and health share the TLS flags -tls, -cacert, -cert, -key,
// -servername and -insecure (tlsflags.go).
//
// Run zapcodec with no arguments or -h for the usage of every subcommand.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand. run gets the arguments after the subcommand's
// name and returns the process exit code (0 ok, 1 failure, 2 bad usage).
type command struct {
	name    string
	summary string // one line
	usage   string // the synopsis and flags, several lines
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands is filled by the init functions of the subcommand files.
var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("BUG: subcommand " + c.name + " registered twice")
	}
	commands[c.name] = c
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run dispatches args[0] to its subcommand.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 {
			// help SUBCOMMAND: that subcommand's usage alone.
			c, ok := commands[args[1]]
			if !ok {
				fmt.Fprintf(stderr, "zapcodec: unknown subcommand %q\n\n", args[1])
				usage(stderr)
				return 2
			}
			fmt.Fprintf(stdout, "%s: %s\n%s", c.name, c.summary, c.usage)
			return 0
		}
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "zapcodec: unknown subcommand %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

// usage prints every subcommand's usage, in name order.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: zapcodec <subcommand> [arguments]")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := commands[n]
		fmt.Fprintf(w, "\n%s: %s\n%s", c.name, c.summary, c.usage)
	}
}
