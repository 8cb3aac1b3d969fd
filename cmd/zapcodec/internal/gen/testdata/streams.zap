# Streaming methods: a zapcodec extension of the schema language (the
# canonical compiler has no streams). Generated into
# internal/gentest/streams, whose tests run every kind over rpc.
package streams

struct Filter
    From  u64
    Count u32
    Size  u32

struct Log
    Block u64
    Index u32
    Data  bytes

struct Chunk
    Seq  u32
    Data bytes

struct Summary
    Chunks u32
    Bytes  u64

struct Msg
    Seq  u32
    Text text

interface Feed {
    subscribe(req: Filter) returns (stream Log)
    upload(stream Chunk) returns (resp: Summary)
    chat(stream Msg) returns (stream Msg)
    ping()
    heads() returns (stream Log)
    sink(stream Chunk)
}
