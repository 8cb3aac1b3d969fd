package rpc

// Pending returns how many calls hold a place in the client's table of
// pending calls: calls being sent or waiting for their answer, and
// promises ([Client.Send]) not yet waited for or released. Calls
// abandoned by their ctx are not counted. A load balancer reads it to
// learn whether a connection can be closed without failing a call. It
// is two atomic loads and the table's length (the free-slot stack keeps
// its count): it may be read per call.
func (c *Client) Pending() int { return c.active() }

// Streams returns how many streams are open on the client's connection
// (opened and not yet ended both ways, or failed). A load balancer reads
// it, beside [Client.Pending], before it closes a connection it retired,
// and may read it per call: it is one atomic load.
func (c *Client) Streams() int { return c.streams.open() }

// Promises returns how many promises ([Client.Send], [Promise.Send]) are
// outstanding on the connection: sent, and neither waited for nor
// released (a Wait counts until it returns). A load balancer may read it
// per call (one atomic load) to count work sent on a connection whose
// answer is not yet taken; a promise never waited for nor released counts
// for ever.
func (c *Client) Promises() int { return max(int(c.promises.Load()), 0) }
