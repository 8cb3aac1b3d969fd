package rpc

// Pending returns how many calls hold a place in the client's table of
// pending calls: calls being sent or waiting for their answer, and
// promises ([Client.Send]) not yet waited for or released. Calls
// abandoned by their ctx are not counted. A load balancer reads it to
// learn whether a connection can be closed without failing a call.
func (c *Client) Pending() int { return int(c.active.Load()) }
