package schema

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokKind classifies a token.
type tokKind uint8

const (
	tokEOF     tokKind = iota
	tokNewline         // end of a line that held at least one token
	tokIdent           // [A-Za-z_][A-Za-z0-9_]*
	tokNumber          // [0-9][A-Za-z0-9_]*, checked by the parser
	tokPunct           // one of { } ( ) < > [ ] = @ : ; , -
	tokBad             // a character outside the dialect: the lexer stops there
)

type token struct {
	kind tokKind
	text string
	pos  Pos
	off  int // byte offset of the token in the source
	// first marks the first token of its line; doc is then the comment
	// lines alone on the lines right above it (no blank line between),
	// joined by "\n".
	first bool
	doc   string
}

// maxQuoted is how much of a token, or of any text, an error message
// shows (errorf): an identifier or a number may be as long as the file,
// and a message stays a line.
const maxQuoted = 128

// described is a token named for an error message: errorf shows it whole
// (describe has cut it).
type described string

// describe names the token for error messages, a long one cut (see
// maxQuoted) with its length.
func (t token) describe() described {
	switch t.kind {
	case tokEOF:
		return "end of file"
	case tokNewline:
		return "end of line"
	case tokBad:
		return "a character outside the dialect"
	}
	if len(t.text) > maxQuoted {
		return described(fmt.Sprintf("%q%s", t.text[:maxQuoted], cutNote(t.text)))
	}
	return described(fmt.Sprintf("%q", t.text))
}

// cut returns text for an error message: up to maxQuoted bytes, with its
// length when longer. (Tokens are ASCII, and so are the texts made of
// them: any cut falls between characters.)
func cut(text string) string {
	if len(text) > maxQuoted {
		return text[:maxQuoted] + cutNote(text)
	}
	return text
}

func cutNote(text string) string { return fmt.Sprintf("... (%d bytes)", len(text)) }

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// words are the type names and keywords of the dialect, which the lexer
// returns without copying them out of the source.
var words = map[string]string{}

func init() {
	for w := range builtins {
		words[w] = w
	}
	for _, w := range []string{"bytes_fixed", "list", "package", "type", "struct", "interface", "returns", "stream"} {
		words[w] = w
	}
}

// byteOrderMark is U+FEFF in UTF-8.
var byteOrderMark = []byte{0xEF, 0xBB, 0xBF}

// lexer splits a source into tokens one at a time, as the parser asks
// (it looks at most two tokens ahead), so that what a parse holds follows
// the declarations it read, not the tokens of the whole file: a file of
// ten million "{" held 1.7 GB of tokens before its first one was refused.
// Blank lines make no token. Spaces, tabs and the carriage return of a
// "\r\n" separate tokens (a carriage return alone is refused); a tab in
// the indentation counts as one column, like a space (the whitespace form
// only compares the columns of lines of one block).
//
// A UTF-8 byte order mark that starts src (editors on Windows write one) is
// skipped, and the first line's columns count from after it, as an editor
// shows them; one anywhere else is an unexpected character.
//
// Comments make no token either: the lines alone on their lines right
// above a line's first token go to it as its doc (see token), and the
// comment ending a line is read from the source by trailing.
type lexer struct {
	filename        string
	src             []byte
	i               int
	line, lineStart int
	hasTok          bool // the current line produced a token
	// run is the doc under way: the comment lines alone on their lines
	// ending at runEnd, one after another.
	run    []string
	runEnd int
	err    *Error // why the lexer stopped at a tokBad
}

func newLexer(filename string, src []byte) *lexer {
	l := &lexer{filename: filename, src: src, line: 1}
	if bytes.HasPrefix(src, byteOrderMark) {
		l.i, l.lineStart = len(byteOrderMark), len(byteOrderMark)
	}
	return l
}

func (l *lexer) pos(i int) Pos { return Pos{l.filename, l.line, i - l.lineStart + 1} }

// next returns the next token. At the end of the source it returns a
// tokEOF, at a character outside the dialect a tokBad (l.err says why),
// and then the same again.
func (l *lexer) next() token {
	if l.err != nil {
		return token{kind: tokBad, pos: l.err.Pos, off: l.i}
	}
	src := l.src
	for l.i < len(src) {
		i := l.i
		c := src[i]
		switch {
		case c == '\n':
			l.i++
			nl := token{kind: tokNewline, pos: l.pos(i), off: i}
			l.line, l.lineStart = l.line+1, l.i
			if l.hasTok {
				l.hasTok = false
				return nl
			}
			continue
		case c == ' ' || c == '\t' || c == '\r' && !loneCR(src, i):
			l.i++
			continue
		case c == '#':
			end := i + 1
			for end < len(src) && src[end] != '\n' && !loneCR(src, end) {
				end++
			}
			l.i = end
			if !l.hasTok {
				if l.runEnd != l.line-1 {
					l.dropRun()
				}
				l.run, l.runEnd = append(l.run, commentText(src[i+1:end])), l.line
			}
			continue
		}
		t := token{pos: l.pos(i), off: i}
		if !l.hasTok {
			t.first = true
			if len(l.run) > 0 && l.runEnd == l.line-1 {
				t.doc = strings.Join(l.run, "\n")
			}
			l.dropRun()
			l.hasTok = true
		}
		switch {
		case isLetter(c):
			for l.i < len(src) && (isLetter(src[l.i]) || isDigit(src[l.i])) {
				l.i++
			}
			t.kind = tokIdent
			if w, ok := words[string(src[i:l.i])]; ok {
				t.text = w // no copy of the words a schema repeats
			} else {
				t.text = string(src[i:l.i])
			}
		case isDigit(c):
			for l.i < len(src) && (isLetter(src[l.i]) || isDigit(src[l.i])) {
				l.i++
			}
			t.kind, t.text = tokNumber, string(src[i:l.i])
		case c < utf8.RuneSelf && strings.IndexByte("{}()<>[]=@:;,-", c) >= 0:
			l.i++
			t.kind, t.text = tokPunct, string(src[i:l.i])
		case c == '\r':
			l.err = errorf(t.pos, `line ending \r not supported: end lines with \n or \r\n`)
			t.kind = tokBad
		default:
			if r, size := utf8.DecodeRune(src[i:]); r == utf8.RuneError && size <= 1 {
				l.err = errorf(t.pos, "invalid UTF-8 byte 0x%02x", c)
			} else {
				l.err = errorf(t.pos, "unexpected character %q", r)
			}
			t.kind = tokBad
		}
		return t
	}
	if l.hasTok {
		l.hasTok = false
		return token{kind: tokNewline, pos: l.pos(len(src)), off: len(src)}
	}
	return token{kind: tokEOF, pos: l.pos(len(src)), off: len(src)}
}

// loneCR reports whether src[i] is a carriage return that does not start
// a "\r\n": the line ending of classic Mac OS, which the lexer refuses.
// Taken as a space, as it was, it ran the lines it ended into one, which
// failed with a misleading error, or, after a comment, made the rest of
// the file part of that comment.
func loneCR(src []byte, i int) bool {
	return src[i] == '\r' && (i+1 == len(src) || src[i+1] != '\n')
}

// dropRun ends the doc under way, letting go of its lines.
func (l *lexer) dropRun() {
	clear(l.run)
	l.run = l.run[:0]
}

// trailing returns the comment that ends the line of the token at off,
// "" when it has none. (No token holds a "#": the first one on the line
// starts the comment.)
func (l *lexer) trailing(off int) string {
	for j := off; j < len(l.src) && l.src[j] != '\n' && !loneCR(l.src, j); j++ {
		if l.src[j] == '#' {
			end := j + 1
			for end < len(l.src) && l.src[end] != '\n' && !loneCR(l.src, end) {
				end++
			}
			return commentText(l.src[j+1 : end])
		}
	}
	return ""
}

// commentText is the text of a comment, the bytes after its "#": without
// one leading space and the trailing white space, invalid UTF-8 replaced.
func commentText(b []byte) string {
	text := strings.TrimRight(string(b), " \t\r")
	text = strings.TrimPrefix(text, " ")
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	return text
}
