//go:build zapdebug

package pool

// poisonDefault: the zapdebug build tag turns poisoning on at start-up.
const poisonDefault = true
