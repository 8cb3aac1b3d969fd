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
