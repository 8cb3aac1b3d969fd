//go:build !zapdebug

package pool

// poisonDefault: poisoning is off unless built with -tags zapdebug.
const poisonDefault = false
