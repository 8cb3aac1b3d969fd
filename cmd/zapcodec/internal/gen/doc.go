// Package gen turns a resolved schema ([schema.File]) into Go source: typed
// records on top of package codec and RPC stubs on top of package rpc.
//
// One output file is written per schema file, named after it ("eth.zap" →
// "eth.zap.go"), holding the records of the structs and the stubs of the
// interfaces declared in that file. Output is gofmt'd and deterministic.
//
// # Records (per struct T)
//
//	type T struct{ ... }                       // plain Go fields
//	func (m *T) AppendZAP(dst []byte) []byte   // one whole version-1 message
//	func (m *T) SizeZAP() int                  // its exact length
//	func (m *T) DecodeZAP(b []byte) error      // fills m, reusing m's memory
//	func (m *T) AppendBinary(dst []byte) ([]byte, error)
//	func (m *T) MarshalBinary() ([]byte, error)
//	func (m *T) UnmarshalBinary(b []byte) error
//	type TView struct{ ... }                   // zero-copy view
//	func ReadT(b []byte) (TView, error)
//	func (v TView) IsNull() bool
//	func (v TView) F() ...                     // one accessor per field
//
// Field types: bool, u8..u64 → uint8..uint64, i8..i64 → int8..int64, f32/f64
// → float32/float64, text → string, bytes → []byte, bytes_fixed[N] → [N]byte,
// struct U → *U (nil is a null slot), and a list follows its element:
// list<U> → []U, list<u32> → []uint32, list<text> → []string, list<bytes> →
// [][]byte, list<bytes_fixed[4]> → [][4]byte, list<list<u16>> → [][]uint16.
//
// View accessors: scalars by value; text as a string aliasing the message
// plus an FBytes() []byte twin; bytes as []byte aliasing the message;
// bytes_fixed[N] as [N]byte by value plus an FBytes() []byte alias; a nested
// struct as a UView (null when the slot is null); a list as a per-field
// list view TFList with Len(), IsNull(), At(i) and Iter() (a front-to-back
// TFIter with Next, Index and Value). At(i) of a list of scalars or
// bytes_fixed is O(1) when its elements are uniform (as every writer makes
// them) and walks otherwise; of other lists it walks the elements before i.
// The element of a nested list is a view TFElemList of the same shape (and
// TFElemElemList below it, and so on).
//
// # Layout
//
// AppendZAP builds the message the way the canonical generated constructors
// do: it starts the root object and sets the fields in declaration order.
// Text and bytes values are deferred tails, written when their object
// finishes, in set order. Nested structs and lists are built while their
// parent object is open, in field order, so they land after the parent's
// fixed section and before its tails.
//
// Every list<T> is a variable-element list (docs/wire.md §4), as the canonical
// schema compiler writes it: 8-aligned, each element [u32 size][element
// bytes]. The element bytes of a scalar are its little-endian value at its
// declared width (floats as IEEE-754 bits, bool one byte 00/01); of text and
// bytes the value; of bytes_fixed[N] its N bytes; of a struct a whole
// message; of a nested list the inner list's elements, back to back (the
// canonical compiler takes any bytes there; this is the form zapcodec
// writes and reads). An empty list is still started, which pads the buffer
// to 8, and leaves the slot {0, 0}. DecodeZAP refuses a scalar or
// bytes_fixed element of another size; views read it as zero.
//
// # RPC stubs (per interface I, method M with ordinal n)
//
//	const IMOrdinal uint32 = n
//	const IServiceName = "schemapkg.I"
//	type IServer interface{ M(ctx context.Context, req ReqView, resp *Resp) error }
//	func RegisterIServer(s *rpc.Server, impl IServer, opts ...rpc.MountOption)
//	type IClient struct{ ... }
//	func NewIClient(c rpc.Caller, opts ...rpc.MountOption) *IClient
//	func (c *IClient) M(ctx context.Context, req *Req, resp *Resp) error
//
// A method without a request drops req, one without a result drops resp.
// RegisterIServer mounts I on the server (rpc.Server.Mount: it panics when
// I's ordinals overlap another mounted interface's); with rpc.At(base) it
// serves M at base+n, and NewIClient given the same rpc.At(base) calls
// there. Without an option both use the canonical ordinals 1..n.
package gen
