# Every field kind, both struct forms, aliases of aliases and @N resets.
package all

type id = bytes_fixed[16]
type key = id                  # alias of an alias
type keyAgain = key            # and once more
type ids = list<u64>
type point = Point             # alias of a struct declared later

# Whitespace form with a @N reset in the middle.
struct Scalars
    Flag  bool
    Small u8
    Port  u16
    Count u32
    Big   u64
    Delta i8   @24              # cursor jumps to 24, then 25
    Temp  i16
    Off   i32
    Nanos i64
    Ratio f32
    Score f64

struct Point {
    X i32 @0
    Y i32 @4
}

struct Kitchen {
    Title  text       @0
    Blob   bytes      @8
    Key    keyAgain   @16
    Hash   bytes_fixed[32] @32
    Bytes  list<u8>   @64
    Words  list<u32>  @72
    Longs  ids        @80
    Points list<Point> @88
    Origin point      @96
    Self   Kitchen    @100
    Tail   u8                   # positional after @100 + 4
}

# Brace form on one line, positional without @N.
struct Pair { A u16; B text }

# Whitespace form, gap then positional again.
struct Sparse
    First  u8
    Second u64 @8
    Third  u8
    Named  list<text>
    Raw    list<bytes>
    Floats list<f64>

struct Empty {}

interface Service {
    get(req: Pair) returns (resp: Kitchen)
    put(in: point)
    ping()
    stats() returns (out: Scalars) ; reset()
    # Its request is stats' result: the client gets BumpOn (pipelining).
    bump(in: Scalars) returns (out: Scalars)
}

# Every list element type: scalars of each width, bytes_fixed, aliases,
# nested lists (of scalars, structs and text), tab indentation.
struct Deep
	Bools  list<bool>
	Tiny   list<i8>
	Shorts list<i16>
	Reals  list<f32>
	Quads  list<bytes_fixed[4]>
	Keys   list<key>
	Blobs  list<bytes>
	Grid   list<list<u16>>
	Runs   list<ids>
	Paths  list<list<Point>>
	Words  list<list<list<text>>>
	Pairs  list<Pair>
	Trees  list<list<Kitchen>>

# A list of records without fields: AppendZAP writes each element with
# the element's own AppendZAP (a flat element with fields is written in
# place).
struct Empties
	Es list<Empty>
	N  u8

# An interface without methods, whitespace form.
interface Nothing

# Records whose Go form is far larger than the least message that names
# them: a tree of 1 KiB nodes, which a hostile message shares along many
# paths, and a list of 4 KiB blocks, which it can list as bare headers
# (internal/gentest/all/hostile_test.go).
struct Node
    Left  Node
    Right Node
    Data  bytes_fixed[1024]

struct Block
    Data bytes_fixed[4096]

struct Blocks
    Items list<Block>

# A flat record with more text and bytes fields than DecodeZAP's budget
# factor: a hostile message points them all at one value, which each
# field would copy (internal/gentest/all/hostile_test.go).
struct Wide
    A text
    B text
    C text
    D text
    N u32
    E bytes
    F bytes
    G text
    H bytes

# A flat record with more text and bytes fields than a decode holds in a
# variable each (gen's maxHeldTails, 64): its decodes read each value where
# they copy it (internal/gentest/all/hostile_test.go), and its sums of
# lengths are split into statements of at most 8 terms. BroadBox nests it
# and lists it (its budgeted decode, and its append written in place).
struct Broad
    T00 text
    B01 bytes
    T02 text
    B03 bytes
    T04 text
    B05 bytes
    T06 text
    B07 bytes
    T08 text
    B09 bytes
    T10 text
    B11 bytes
    T12 text
    B13 bytes
    T14 text
    B15 bytes
    T16 text
    B17 bytes
    T18 text
    B19 bytes
    T20 text
    B21 bytes
    T22 text
    B23 bytes
    T24 text
    B25 bytes
    T26 text
    B27 bytes
    T28 text
    B29 bytes
    T30 text
    B31 bytes
    T32 text
    B33 bytes
    T34 text
    B35 bytes
    T36 text
    B37 bytes
    T38 text
    B39 bytes
    T40 text
    B41 bytes
    T42 text
    B43 bytes
    T44 text
    B45 bytes
    T46 text
    B47 bytes
    T48 text
    B49 bytes
    T50 text
    B51 bytes
    T52 text
    B53 bytes
    T54 text
    B55 bytes
    T56 text
    B57 bytes
    T58 text
    B59 bytes
    T60 text
    B61 bytes
    T62 text
    B63 bytes
    T64 text
    B65 bytes
    T66 text
    B67 bytes
    T68 text
    B69 bytes
    N u32

struct BroadBox
    One Broad
    Many list<Broad>
