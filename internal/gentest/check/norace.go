//go:build !race

package check

const raceDivisor = 1
