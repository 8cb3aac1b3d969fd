//go:build zapdebug

package poison

// byDefault: the zapdebug build tag turns poisoning on at start-up.
const byDefault = true
