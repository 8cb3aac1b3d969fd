// Package schema reads .zap schemas (the canonical compiler's dialect, docs/wire.md
// §10) into a resolved, laid-out AST: every alias followed, every field at
// its byte offset, every method with its ordinal. The zapcodec code
// generator is built on it, and so are package compat, which compares two
// versions of a schema (zapcodec breaking), and package dynamic, a JSON
// gateway's ground; so can be a schema linter.
//
// Experimental: the API may change in later versions.
//
// # Dialect
//
//	# comment to end of line
//	package eth                      # optional, at most once per file
//	type hash = bytes_fixed[32]      # alias; may name another alias or a struct
//
//	struct GetBalanceResponse        # whitespace form: fields on the following
//	    Balance   hash               # lines, indented alike (a tab counts as one
//	    Nonce     u64                # column, as a space does), each
//	                                 # "Name Type [@N]"; the block ends at the
//	                                 # next line starting in column 1
//	struct Item {                    # brace form: fields separated by newlines
//	    Tag  u32  @0                 # or ";", closed by "}"
//	    Name text @4
//	}
//
//	interface Eth {                  # methods separated by newlines or ";"
//	    getBalance(req: GetBalanceRequest) returns (resp: GetBalanceResponse)
//	    notify(req: Ping)
//	    shutdown()
//	}
//
//	interface Feed {                 # streams, a zapcodec extension (the
//	                                 # canonical compiler has none): "stream T"
//	                                 # or "name: stream T", on either side
//	    subscribe(req: Filter) returns (stream Log)
//	    upload(in: stream Chunk) returns (resp: Summary)
//	    chat(stream Msg) returns (stream Msg)
//	}
//
// Types: bool u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 text bytes
// bytes_fixed[N] list<T>, struct names and alias names. A struct may be
// referenced before it is declared. A list element may be any of these,
// bytes_fixed[N] and another list included (list<list<u8>>), with lists
// nested at most [MaxListDepth] deep.
//
// # Layout
//
// Both forms use one rule: a cursor starts at 0; a field written "@N" is
// placed at N, any other field at the cursor; after each field the cursor is
// its offset plus its slot width ([Kind.Width]). Fields are packed with no
// alignment. So a brace-form field without "@N" follows the previous field
// exactly as in the whitespace form. Overlapping fields are an error. A
// struct's Size is the end of its last-ending field (0 when it has none).
//
// # Errors
//
// [Parse] and [ParseFiles] stop at the first problem and return it as an
// [*Error] whose text is "file:line:col: message". Syntax errors are found
// in source order, then alias, struct and interface resolution run in
// declaration order. Columns count bytes from 1. Lines end in "\n" or
// "\r\n"; a carriage return alone (classic Mac OS) is an error at its
// position. A UTF-8 byte order mark at the start of a file (editors on
// Windows write one) is skipped, and the first line's columns count from
// after it; anywhere else it is an error.
//
// # Memory
//
// The source is split into tokens as the parser reads them, so a parse
// holds what it built (the declarations read so far) and the source, not
// a token for each byte of it; Parse does not retain src.
package schema
