type l1 = list<u8>
type l2 = list<l1>
type l3 = list<l2>
type l4 = list<l3>
type l5 = list<l4>
type l6 = list<l5>
type l7 = list<l6>
type l8 = list<l7>
struct A
    X list<l8>
