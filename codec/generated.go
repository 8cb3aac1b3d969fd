package codec

// GeneratedVersion1 is referenced by every file that `zapcodec gen` writes
// ("const _ = codec.GeneratedVersion1"). It names the version of the API that
// generated records rely on (Builder, ObjectBuilder, ListBuilder, Parse,
// Object, List); a codec that drops or changes that API drops this constant
// too, so a stale pair of generated code and runtime fails to build instead
// of misbehaving.
const GeneratedVersion1 = 1
