# A struct of size 0: the root of the zero_size_root message (messages-more.json).
struct Empty {}
