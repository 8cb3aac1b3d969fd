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
	tokBad             // where lex stopped at a character outside the dialect
)

type token struct {
	kind tokKind
	text string
	pos  Pos
}

// describe names the token for error messages.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of file"
	case tokNewline:
		return "end of line"
	case tokBad:
		return "a character outside the dialect"
	}
	return fmt.Sprintf("%q", t.text)
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// byteOrderMark is U+FEFF in UTF-8.
var byteOrderMark = []byte{0xEF, 0xBB, 0xBF}

// comment is one "# ..." comment: its line, its text without the "#" and
// one following space, and whether it is alone on its line (own) or
// follows tokens (trailing).
type comment struct {
	line int
	text string
	own  bool
}

// lex splits src into tokens, dropping blank lines, and returns the
// comments apart, by line. Spaces,
// tabs and carriage returns separate tokens; a tab in the indentation counts
// as one column, like a space (the whitespace form only compares the columns
// of lines of one block). The result ends with a tokEOF; at a character
// outside the dialect it ends there instead, with a tokBad, and the error
// is returned too: the parser reads the tokens before it, so that a syntax
// error there is reported first (errors come in source order).
//
// A UTF-8 byte order mark that starts src (editors on Windows write one) is
// skipped, and the first line's columns count from after it, as an editor
// shows them; one anywhere else is an unexpected character.
func lex(filename string, src []byte) ([]token, map[int]comment, error) {
	var toks []token
	comments := map[int]comment{}
	line, lineStart := 1, 0
	pos := func(i int) Pos { return Pos{filename, line, i - lineStart + 1} }
	hasTok := false // the current line produced a token
	i := 0
	if bytes.HasPrefix(src, byteOrderMark) {
		i, lineStart = len(byteOrderMark), len(byteOrderMark)
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			if hasTok {
				toks = append(toks, token{tokNewline, "", pos(i)})
			}
			i++
			line, lineStart = line+1, i
			hasTok = false
			continue
		case c == ' ' || c == '\r' || c == '\t':
			i++
			continue
		case c == '#':
			start := i + 1
			for i < len(src) && src[i] != '\n' {
				i++
			}
			text := strings.TrimRight(string(src[start:i]), " \t\r")
			text = strings.TrimPrefix(text, " ")
			if !utf8.ValidString(text) {
				text = strings.ToValidUTF8(text, "\uFFFD")
			}
			comments[line] = comment{line, text, !hasTok}
			continue
		}
		hasTok = true
		start := i
		switch {
		case isLetter(c):
			for i < len(src) && (isLetter(src[i]) || isDigit(src[i])) {
				i++
			}
			toks = append(toks, token{tokIdent, string(src[start:i]), pos(start)})
		case isDigit(c):
			for i < len(src) && (isLetter(src[i]) || isDigit(src[i])) {
				i++
			}
			toks = append(toks, token{tokNumber, string(src[start:i]), pos(start)})
		case c < utf8.RuneSelf && strings.IndexByte("{}()<>[]=@:;,-", c) >= 0:
			i++
			toks = append(toks, token{tokPunct, string(src[start:i]), pos(start)})
		default:
			var err *Error
			if r, size := utf8.DecodeRune(src[i:]); r == utf8.RuneError && size <= 1 {
				err = errorf(pos(i), "invalid UTF-8 byte 0x%02x", c)
			} else {
				err = errorf(pos(i), "unexpected character %q", r)
			}
			return append(toks, token{tokBad, "", err.Pos}), comments, err
		}
	}
	if hasTok {
		toks = append(toks, token{tokNewline, "", pos(len(src))})
	}
	return append(toks, token{tokEOF, "", pos(len(src))}), comments, nil
}
