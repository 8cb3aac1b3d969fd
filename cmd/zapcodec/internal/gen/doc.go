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
// struct U → *U (nil is a null slot), list<U> → []U, list<scalar> → []scalar,
// list<text> → []string, list<bytes> → [][]byte.
//
// View accessors: scalars by value; text as a string aliasing the message
// plus an FBytes() []byte twin; bytes as []byte aliasing the message;
// bytes_fixed[N] as [N]byte by value plus an FBytes() []byte alias; a nested
// struct as a UView (null when the slot is null); a list as a per-field
// list view TFList with Len(), At(i) and Iter() (a front-to-back TFIter with
// Next, Index and Value).
//
// # Layout
//
// AppendZAP builds the message the way the canonical generated constructors
// do: it starts the root object and sets the fields in declaration order.
// Text and bytes values are deferred tails, written when their object
// finishes, in set order. Nested structs and lists are built while their
// parent object is open, in field order, so they land after the parent's
// fixed section and before its tails. A list of structs is a
// variable-element list whose elements are whole messages; a list of
// scalars is a flat list of little-endian elements; an empty list is a
// {0, 0} slot and writes nothing.
//
// list<text> and list<bytes> have no canonical generated form; they are
// written as variable-element lists whose elements are the raw bytes of each
// value ([u32 length][bytes]), which canonical readers read with their
// variable-element list accessors.
//
// # RPC stubs (per interface I, method M with ordinal n)
//
//	const IMOrdinal uint32 = n
//	type IServer interface{ M(ctx context.Context, req ReqView, resp *Resp) error }
//	func RegisterIServer(s *rpc.Server, impl IServer)
//	type IClient struct{ ... }
//	func NewIClient(c rpc.Caller) *IClient
//	func (c *IClient) M(ctx context.Context, req *Req, resp *Resp) error
//
// A method without a request drops req, one without a result drops resp.
package gen
