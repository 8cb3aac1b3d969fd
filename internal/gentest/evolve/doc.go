// Package evolve tests schema evolution between two generated packages:
// evold, generated from cmd/zapcodec/internal/gen/testdata/evolve_old.zap,
// and evnew, from evolve_new.zap, the same schema with fields added at the
// end of every struct. It holds tests only.
package evolve
