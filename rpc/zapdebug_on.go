//go:build zapdebug

package rpc

// zapdebug is true in a binary built with the zapdebug tag: a server then
// poisons the request buffer of each call, and its cap and metadata (a
// stream's too), once its handler returned (poisonRequest), when poisoning is on (internal/poison: on by default
// in that build).
const zapdebug = true
