package rpc

// WithOnClosing has f called once, in a goroutine of its own, when the
// client first stops taking new calls: it read the server's go-away
// ([Client.Draining] turns true; the calls in flight go on), or the
// connection closed or broke ([Client.Closed] turns true: the client's
// own Close included), whichever comes first. A pool of connections
// (rpc/cluster) uses it to dial a replacement as soon as a connection is
// lost, even an idle one, rather than at the next call that finds it
// so. f gets the client, and may call its methods. Given several times,
// every f given is called, in order, in that one goroutine. Nothing is
// called, and no goroutine started, without one; the calls pay nothing
// for it either way.
func WithOnClosing(f func(*Client)) ClientOption {
	return clientOption(func(o *clientOptions) {
		if f != nil {
			o.onClosing = append(o.onClosing, f)
		}
	})
}

// noteClosing calls the WithOnClosing functions the first time it is
// called: at the go-away the read loop reads, or at fail.
func (c *Client) noteClosing() {
	fs := c.opts.onClosing
	if len(fs) == 0 || !c.closingNoted.CompareAndSwap(false, true) {
		return
	}
	go func() {
		for _, f := range fs {
			f(c)
		}
	}()
}
