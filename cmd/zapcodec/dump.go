package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/zapcodec/zapcodec/cmd/zapcodec/internal/dump"
	"github.com/zapcodec/zapcodec/codec/schema"
)

func init() {
	register(&command{
		name:    "dump",
		summary: "show ZAP messages or transport frames, raw or through a schema",
		usage: `  zapcodec dump [flags] [FILE]
    Reads FILE (or stdin when FILE is absent or "-"), raw bytes or hex text
    of at most 64 MiB, holding one ZAP message (it starts with "ZAP\x00") or
    a stream of transport frames. Without a schema it shows the header and
    the root object's fixed section as raw words, with the slots that
    resolve; with -schema and -type it shows the record as JSON with field
    names.
  -hex, -raw          force hex text or raw bytes (default: hex when the
                      input is only hex digits and white space)
  -message, -frames   force one message or a frame stream (default: a
                      message when the input starts with "ZAP\x00")
  -http               frames are ZAP-over-HTTP: big-endian u32 length, no kind
  -schema FILE.zap    schema to decode with (at most 16 MiB)
  -type NAME          a struct; or a method ("Eth.getBalance", "getBalance")
                      or interface ("Eth") for RPC envelopes and payloads:
                      requests decode as the method's request struct,
                      answers as its response struct, stream messages
                      as the struct the stream carries; any of these
                      may be qualified by the schema's package, as
                      service names are ("eth.Eth.getBalance")
  -response           a bare payload given with a method -type is the
                      method's response (default: its request)
`,
		run: func(args []string, stdout, stderr io.Writer) int {
			return runDump(args, os.Stdin, stdout, stderr)
		},
	})
}

// runDump is the dump subcommand: it parses the flags, reads the schema and
// the input, and has package dump write the listing. It returns 0 when all
// the input was shown, 1 when the input (or a part of it) is malformed, 2
// on bad usage.
func runDump(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts dump.Options
	fs.BoolVar(&opts.Hex, "hex", false, "input is hex text")
	fs.BoolVar(&opts.Raw, "raw", false, "input is raw bytes")
	fs.BoolVar(&opts.Message, "message", false, "input is one message")
	fs.BoolVar(&opts.Frames, "frames", false, "input is a stream of transport frames")
	fs.BoolVar(&opts.HTTP, "http", false, "frames are ZAP-over-HTTP (big-endian length, no kind)")
	fs.BoolVar(&opts.Response, "response", false, "a bare payload is the method's response")
	schemaPath := fs.String("schema", "", "schema file")
	typeName := fs.String("type", "", "struct, method or interface to decode as")
	fs.Usage = func() { fmt.Fprint(stderr, "usage:\n"+commands["dump"].usage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "zapcodec dump: "+format+"\n", a...)
		return 2
	}
	switch {
	case opts.Hex && opts.Raw:
		return usageErr("-hex and -raw exclude each other")
	case opts.Message && (opts.Frames || opts.HTTP):
		return usageErr("-message excludes -frames and -http")
	case fs.NArg() > 1:
		return usageErr("at most one input file, got %d", fs.NArg())
	case (*schemaPath == "") != (*typeName == ""):
		return usageErr("-schema and -type go together")
	}
	if *schemaPath != "" {
		src, err := readSchemaFile(*schemaPath)
		if err != nil {
			return usageErr("-schema: %v", err)
		}
		f, err := schema.Parse(*schemaPath, src)
		if err != nil {
			return usageErr("%v", err)
		}
		if opts.Target, err = dump.ResolveTarget(f, *typeName); err != nil {
			return usageErr("%v", err)
		}
	}
	r, name := stdin, "stdin"
	if arg := fs.Arg(0); arg != "" && arg != "-" {
		f, err := os.Open(arg)
		if err != nil {
			return usageErr("%v", err)
		}
		defer f.Close()
		r, name = f, arg
	}
	in, err := readAtMost(r, maxDumpInput)
	if errors.Is(err, errTooLarge) {
		return usageErr("%s: more than %d bytes (64 MiB), more than dump reads", name, maxDumpInput)
	}
	if err != nil {
		return usageErr("%v", err)
	}

	rep, err := dump.Write(stdout, in, opts)
	if err != nil {
		fmt.Fprintf(stderr, "zapcodec dump: %v\n", err)
		return 1
	}
	switch {
	case rep.Problems == 1:
		fmt.Fprintf(stderr, "zapcodec dump: %s\n", rep.First)
		return 1
	case rep.Problems > 1:
		fmt.Fprintf(stderr, "zapcodec dump: %d errors, the first: %s\n", rep.Problems, rep.First)
		return 1
	}
	return 0
}
