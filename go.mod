module github.com/zapcodec/zapcodec

go 1.24

require github.com/valyala/bytebufferpool v1.0.0
