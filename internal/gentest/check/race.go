//go:build race

package check

// raceDivisor divides the random round-trip counts under -race, which runs
// the reflection-heavy checks about ten times slower.
const raceDivisor = 10
