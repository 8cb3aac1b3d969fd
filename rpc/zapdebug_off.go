//go:build !zapdebug

package rpc

// zapdebug is false without the zapdebug build tag: the code it guards
// (poisonRequest's calls) is compiled out.
const zapdebug = false
