# Schema evolution, the new side: evolve_old.zap with fields added at the
# end of every struct (internal/gentest/evolve).
package evnew

# Leaf is nested, listed, and listed in lists.
struct Leaf
    A     u32
    Name  text
    B     u64
    Note  text
    Tags  list<u16>
    Sub   Leaf

# Rec holds a Leaf every way a record can.
struct Rec
    ID     u64
    Label  text
    Child  Leaf
    Items  list<Leaf>
    Nums   list<u32>
    Grid   list<list<Leaf>>
    Hash   bytes_fixed[4]
    More   u32
    Note   text
    Extra  list<Leaf>
    Other  Leaf
