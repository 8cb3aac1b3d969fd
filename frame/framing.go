package frame

// UsesHTTPFraming reports whether opts select the ZAP-over-HTTP framing
// ([WithHTTPFraming]; a later option of the list wins, as everywhere). A
// layer that passes Options through and speaks only the canonical
// transport framing, such as package rpc, uses it to refuse them.
func UsesHTTPFraming(opts ...Option) bool { return buildOptions(opts).http }
