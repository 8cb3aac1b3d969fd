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
func (d *dumper) rawObject(indent string, m []byte, base, root int) {
	limit := min(len(m), root+maxFixed)
	end, why := limit, "the message end"
	if limit < len(m) {
		why = fmt.Sprintf("the %d-byte display bound", maxFixed)
	}
	for p := root; p < limit; p++ {
		s, ok := probe(m, base, p, root, root, limit)
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
		s, ok := probe(m, base, p, root, end, end)
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
	if end < len(m) {
		d.printf("%sdata after it: @%d..@%d, %d bytes\n", indent, base+end, base+len(m), len(m)-end)
	}
}

// slot is one plausible slot found by probe.
type slot struct {
	width  int    // 8 for text, bytes and lists, 4 for objects
	target int    // absolute position it points to
	desc   string // what it resolves to
}

// probe guesses whether the bytes at p of message m, a slot that must
// end by limit, are a slot that resolves: a variable-element list whose
// elements walk exactly, a text or bytes value inside the message, a flat
// list, or an 8-aligned object. The value may not lie inside [root, end)
// (the fixed section, when known) nor inside the slot itself. Positions
// are in m; the description gives them in the input, where m is at base.
func probe(m []byte, base, p, root, end, limit int) (slot, bool) {
	w := 8
	outside := func(t int64) bool {
		return t >= codec.HeaderSize && t < int64(len(m)) &&
			(t < int64(root) || t >= int64(end)) && (t < int64(p) || t >= int64(p+w))
	}
	if p+8 <= limit {
		rel := binary.LittleEndian.Uint32(m[p:])
		n := binary.LittleEndian.Uint32(m[p+4:])
		t := int64(p) + int64(int32(rel))
		if rel != 0 && n > 0 && uint64(n) <= uint64(len(m)) && t%codec.Alignment == 0 && outside(t) {
			if sizes, msgs, ok := walkElements(m, int(t), int(n)); ok {
				kind := "elements"
				if msgs {
					kind = "messages"
				}
				return slot{8, int(t), fmt.Sprintf("list  %d variable elements at @%d: %s of %s bytes", n, int64(base)+t, kind, sizes)}, true
			}
		}
		ft := int64(p) + int64(rel)
		if rel != 0 && n > 0 && outside(ft) && ft+int64(n) <= int64(len(m)) {
			v := m[ft : ft+int64(n)]
			switch textClass(v) {
			case 2:
				return slot{8, int(ft), fmt.Sprintf("text  %s (%d bytes at @%d)", quote(v), n, int64(base)+ft)}, true
			case 1:
				return slot{8, int(ft), fmt.Sprintf("text? %s (%d bytes at @%d: %s)", quote(v), n, int64(base)+ft, hexShort(v))}, true
			}
			desc := fmt.Sprintf("bytes %d bytes at @%d: %s", n, int64(base)+ft, hexShort(v))
			if ft%codec.Alignment == 0 {
				desc += " (or a flat list of " + strconv.Itoa(int(n)) + ")"
			}
			return slot{8, int(ft), desc}, true
		}
		if int32(rel) < 0 && n > 0 && t%codec.Alignment == 0 && outside(t) && t+int64(n) <= int64(len(m)) {
			return slot{8, int(t), fmt.Sprintf("list? %d elements at @%d (flat; element width unknown)", n, int64(base)+t)}, true
		}
	}
	if w = 4; p+4 <= limit {
		rel := int32(binary.LittleEndian.Uint32(m[p:]))
		t := int64(p) + int64(rel)
		if rel != 0 && t%codec.Alignment == 0 && outside(t) {
			return slot{4, int(t), fmt.Sprintf("object? at @%d", int64(base)+t)}, true
		}
	}
	return slot{}, false
}

// walkElements walks n elements [u32 size][size bytes] from t; ok when all fit
// in m. It returns the first sizes and whether every element starts with
// the message magic.
func walkElements(m []byte, t, n int) (sizes string, msgs, ok bool) {
	var sb strings.Builder
	msgs = true
	p := t
	for i := 0; i < n; i++ {
		if p+4 > len(m) {
			return "", false, false
		}
		sz := int(binary.LittleEndian.Uint32(m[p:]))
		p += 4
		if sz < 0 || sz > len(m)-p {
			return "", false, false
		}
		if !bytes.HasPrefix(m[p:p+sz], []byte(codec.Magic)) {
			msgs = false
		}
		switch {
		case i < 8:
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(strconv.Itoa(sz))
		case i == 8:
			sb.WriteString(", ...")
		}
		p += sz
	}
	return sb.String(), msgs, true
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
