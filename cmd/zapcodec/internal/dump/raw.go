package dump

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/codec"
)

// maxFixed bounds how much of a root object's fixed section dump shows
// without a schema, when no slot says where the fixed section ends.
const maxFixed = 256

// rawObject shows the fixed section of the object at root of message m
// without a schema: its size is unknown, so it shows the bytes up to the
// first value that a resolving slot points to (or maxFixed bytes, or
// the message end), as rows of 8 bytes with their u32 words, then the
// slots that resolve. m is at base of the input: every position shown
// ("@N") is one of the input, as in the errors ("at byte N"); offsets
// from the root are shown as "+N".
//
// The guessing is linear in the size of m: a list that slots point to is
// walked once however many point to it (guesser), the lists of one
// object walk at most walkBound elements together, and a text guess looks
// at the first textPrefix bytes of a value.
func (d *dumper) rawObject(indent string, m []byte, base, root int) {
	g := newGuesser(m)
	defer func() { d.walked += g.walked; d.scanned += g.scanned }()
	limit := min(len(m), root+maxFixed)
	end, why := limit, "the message end"
	if limit < len(m) {
		why = fmt.Sprintf("the %d-byte display bound", maxFixed)
	}
	for p := root; p < limit; p++ {
		s, ok := g.probe(base, p, root, root, limit, false)
		if !ok {
			continue
		}
		if s.target > root && s.target < end {
			end, why = s.target, "the first value a slot points to"
		}
		p += s.width - 1 // a slot's own bytes are not another slot
	}
	d.printf("%sroot object @%d: fixed section size unknown without a schema; showing %d bytes, up to %s (@%d)\n",
		indent, base+root, end-root, why, base+end)
	for p := root; p < end; p += 8 {
		row := m[p:min(p+8, end)]
		var words []string
		for i := 0; i+4 <= len(row); i += 4 {
			words = append(words, strconv.FormatUint(uint64(binary.LittleEndian.Uint32(row[i:])), 10))
		}
		d.printf("%s  +%-4d @%-5d % -23x  u32 %s\n", indent, p-root, base+p, row, strings.Join(words, " "))
	}
	var lines []string
	for p := root; p < end; {
		s, ok := g.probe(base, p, root, end, end, true)
		if !ok {
			p++
			continue
		}
		lines = append(lines, fmt.Sprintf("%s  +%-4d @%-5d %s", indent, p-root, base+p, s.desc))
		p += s.width
	}
	if len(lines) == 0 {
		d.printf("%sno text, bytes, list or object slot resolves\n", indent)
	} else {
		d.printf("%sslots that resolve (guesses: without a schema any 4 or 8 bytes may look like one):\n", indent)
		for _, l := range lines {
			d.printf("%s\n", l)
		}
	}
	if g.cut {
		d.printf("%snote: the guesses walked %d list elements, the bound for a message of %d bytes; a slot marked %q was not tried as a variable-element list\n",
			indent, g.walked, len(m), notWalked)
	}
	if end < len(m) {
		d.printf("%sdata after it: @%d..@%d, %d bytes\n", indent, base+end, base+len(m), len(m)-end)
	}
}

// textPrefix is how many bytes of a value a text guess looks at: a value
// whose first textPrefix bytes read as text is shown as text (saying so),
// so that a long value costs no more than a short one.
const textPrefix = 4096

// notWalked ends the description of a slot that the bound on guessing
// work kept from being tried as a variable-element list.
const notWalked = "(not walked as a list)"

// walkBound returns how many list elements the guesses about one object
// of message m may walk together: twice as many as m can hold (each
// element takes at least its 4-byte size word), plus 1024. Walks are
// shared (guesser.elements), so the lists that honest slots point to,
// which do not overlap, never need more than half of it.
func walkBound(m []byte) int { return 2*(len(m)/codec.ElementHeaderSize) + 1024 }

// guesser holds what the slot guesses about one object have found, so
// that the work they do stays linear in the message size: without it,
// each of the many positions that may be a slot walked the list it
// pointed to again, and a long list was walked about 64 times.
type guesser struct {
	m []byte
	// walks holds the walk of each list start a slot pointed to, done as
	// far as some slot's count needed: a list is walked once however
	// many slots point to it.
	walks map[int]*walk
	left  int  // elements the walks may still visit (walkBound)
	cut   bool // the bound stopped a walk
	// walked counts the list elements visited, scanned the bytes of
	// values looked at as text: the work, which the tests bound.
	walked, scanned int
}

func newGuesser(m []byte) *guesser {
	return &guesser{m: m, walks: map[int]*walk{}, left: walkBound(m)}
}

// walk is the state of the walk of a variable-element list from one start.
type walk struct {
	next   int    // position of the size word of element n
	n      int    // elements walked: they all fit in the message
	broke  bool   // element n does not fit: the walk can go no further
	notMsg int    // index of the first element not starting with the message magic; -1 if none so far
	sizes  [9]int // the sizes of the first elements walked
}

// slot is one plausible slot found by probe.
type slot struct {
	width  int    // 8 for text, bytes and lists, 4 for objects
	target int    // absolute position it points to
	desc   string // what it resolves to (only when probe was asked to describe it)
}

// probe guesses whether the bytes at p of message m, a slot that must
// end by limit, are a slot that resolves: a variable-element list whose
// elements walk exactly, a text or bytes value inside the message, a flat
// list, or an 8-aligned object. The value may not lie inside [root, end)
// (the fixed section, when known) nor inside the slot itself. Positions
// are in m; the description, written only when describe is set, gives
// them in the input, where m is at base.
func (g *guesser) probe(base, p, root, end, limit int, describe bool) (slot, bool) {
	m := g.m
	w := 8
	outside := func(t int64) bool {
		return t >= codec.HeaderSize && t < int64(len(m)) &&
			(t < int64(root) || t >= int64(end)) && (t < int64(p) || t >= int64(p+w))
	}
	if p+8 <= limit {
		rel := binary.LittleEndian.Uint32(m[p:])
		n := binary.LittleEndian.Uint32(m[p+4:])
		t := int64(p) + int64(int32(rel))
		cut := false
		if rel != 0 && n > 0 && uint64(n) <= uint64(len(m)) && t%codec.Alignment == 0 && outside(t) {
			sizes, msgs, ok, stopped := g.elements(int(t), int(n), describe)
			if ok {
				if !describe {
					return slot{width: 8, target: int(t)}, true
				}
				kind := "elements"
				if msgs {
					kind = "messages"
				}
				return slot{8, int(t), fmt.Sprintf("list  %d variable elements at @%d: %s of %s bytes", n, int64(base)+t, kind, sizes)}, true
			}
			cut = stopped
		}
		mark := ""
		if cut {
			mark = " " + notWalked
		}
		ft := int64(p) + int64(rel)
		if rel != 0 && n > 0 && outside(ft) && ft+int64(n) <= int64(len(m)) {
			if !describe {
				return slot{width: 8, target: int(ft)}, true
			}
			v := m[ft : ft+int64(n)]
			class, judged := g.textClass(v)
			prefix := "" // the value is longer than the bytes judged
			if judged < len(v) {
				prefix = fmt.Sprintf("; judged by its first %d", judged)
			}
			switch class {
			case 2:
				return slot{8, int(ft), fmt.Sprintf("text  %s (%d bytes at @%d%s)%s", quote(v), n, int64(base)+ft, prefix, mark)}, true
			case 1:
				return slot{8, int(ft), fmt.Sprintf("text? %s (%d bytes at @%d: %s%s)%s", quote(v), n, int64(base)+ft, hexShort(v), prefix, mark)}, true
			}
			desc := fmt.Sprintf("bytes %d bytes at @%d: %s", n, int64(base)+ft, hexShort(v))
			if ft%codec.Alignment == 0 {
				desc += " (or a flat list of " + strconv.Itoa(int(n)) + ")"
			}
			return slot{8, int(ft), desc + mark}, true
		}
		if int32(rel) < 0 && n > 0 && t%codec.Alignment == 0 && outside(t) && t+int64(n) <= int64(len(m)) {
			if !describe {
				return slot{width: 8, target: int(t)}, true
			}
			return slot{8, int(t), fmt.Sprintf("list? %d elements at @%d (flat; element width unknown)%s", n, int64(base)+t, mark)}, true
		}
	}
	if w = 4; p+4 <= limit {
		rel := int32(binary.LittleEndian.Uint32(m[p:]))
		t := int64(p) + int64(rel)
		if rel != 0 && t%codec.Alignment == 0 && outside(t) {
			if !describe {
				return slot{width: 4, target: int(t)}, true
			}
			return slot{4, int(t), fmt.Sprintf("object? at @%d", int64(base)+t)}, true
		}
	}
	return slot{}, false
}

// elements reports whether n elements [u32 size][size bytes] walk from t
// inside the message (ok), and then whether every one starts with the
// message magic and, when describe is set, their first sizes. The walk
// from t is kept and only extended: asked again, for t and any n, it
// visits no element twice. stopped says that the bound on the walks
// (walkBound) ran out before the n elements were walked: ok is then
// false, though they might fit.
func (g *guesser) elements(t, n int, describe bool) (sizes string, msgs, ok, stopped bool) {
	w := g.walks[t]
	if w == nil {
		w = &walk{next: t, notMsg: -1}
		g.walks[t] = w
	}
	m := g.m
	for w.n < n && !w.broke {
		if g.left <= 0 {
			g.cut = true
			return "", false, false, true
		}
		g.left--
		g.walked++
		p := w.next
		if p+4 > len(m) {
			w.broke = true
			break
		}
		sz := int(binary.LittleEndian.Uint32(m[p:]))
		p += 4
		if sz < 0 || sz > len(m)-p {
			w.broke = true
			break
		}
		if w.notMsg < 0 && !bytes.HasPrefix(m[p:p+sz], []byte(codec.Magic)) {
			w.notMsg = w.n
		}
		if w.n < len(w.sizes) {
			w.sizes[w.n] = sz
		}
		w.n++
		w.next = p + sz
	}
	if w.n < n {
		return "", false, false, false
	}
	if describe {
		var sb strings.Builder
		for i := range min(n, len(w.sizes)) {
			switch {
			case i < 8:
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(strconv.Itoa(w.sizes[i]))
			case i == 8:
				sb.WriteString(", ...")
			}
		}
		sizes = sb.String()
	}
	return sizes, w.notMsg < 0 || w.notMsg >= n, true, false
}

// textClass classifies the first textPrefix bytes of v, or all of v
// when it is shorter (see textClass), and returns how many bytes it
// judged v by: len(v), or fewer when v is longer than textPrefix.
func (g *guesser) textClass(v []byte) (class, judged int) {
	if len(v) > textPrefix {
		cut := textPrefix
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut-- // a character the cut would split is left out
		}
		v = v[:cut]
	}
	g.scanned += len(v)
	return textClass(v), len(v)
}

// textClass says how much v looks like text: 2 for printable ASCII
// (tab, CR and LF allowed), 1 for printable UTF-8 with other characters
// (bytes may be valid UTF-8 by chance), 0 otherwise.
func textClass(v []byte) int {
	if !utf8.Valid(v) {
		return 0
	}
	class := 2
	for _, r := range string(v) {
		switch {
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f || r >= 0x80 && r < 0xa0:
			return 0
		case r >= 0x80:
			class = 1
		}
	}
	return class
}

func quote(v []byte) string {
	const max = 64
	if len(v) <= max {
		return strconv.Quote(string(v))
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return strconv.Quote(string(v[:cut])) + "..."
}

func hexShort(v []byte) string {
	const max = 32
	if len(v) <= max {
		return fmt.Sprintf("%x", v)
	}
	return fmt.Sprintf("%x...", v[:max])
}
