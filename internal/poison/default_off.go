//go:build !zapdebug

package poison

// byDefault: poisoning is off unless built with -tags zapdebug.
const byDefault = false
