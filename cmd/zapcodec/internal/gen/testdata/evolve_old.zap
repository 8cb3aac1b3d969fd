# Schema evolution, the old side: evolve_new.zap is this schema with
# fields added at the end of every struct. A reader generated from one
# reads messages written by the other (internal/gentest/evolve).
package evold

# Leaf is nested, listed, and listed in lists.
struct Leaf
    A     u32
    Name  text

# Rec holds a Leaf every way a record can.
struct Rec
    ID     u64
    Label  text
    Child  Leaf
    Items  list<Leaf>
    Nums   list<u32>
    Grid   list<list<Leaf>>
    Hash   bytes_fixed[4]
