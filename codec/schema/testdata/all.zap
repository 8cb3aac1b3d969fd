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
}
