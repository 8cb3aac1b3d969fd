package codec

// GeneratedVersion2 is referenced by every file that `zapcodec gen` writes
// ("const _ = codec.GeneratedVersion2"). It names the version of the API that
// generated records rely on (Builder, ObjectBuilder, ListBuilder, Parse,
// Object, List and the variable-element list helpers); a codec that drops or
// changes that API, or the wire form generated code must write, drops this
// constant too, so a stale pair of generated code and runtime fails to build
// instead of misbehaving.
//
// Version 2: every list<T> is a variable-element list, as the canonical
// schema compiler writes it. Version 1 code wrote lists of scalars flat;
// regenerate it (zapcodec gen) to build against this codec.
const GeneratedVersion2 = 2
