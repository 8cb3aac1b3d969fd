# zapcodec breaking's test: the new side (old.zap edited).
package shop

type sku = bytes_fixed[12]

struct Item
    SKU    sku
    Count  u32
    Memo   text

struct Order
    ID     u64
    Items  list<Item>
    Total  u64
    Flags  u16

struct Receipt
    ID     u64
    Paid   bool
    At     i64

struct Old
    X u8

interface Shop {
    place(req: Order) returns (resp: Receipt)
    get(req: Order) returns (resp: Order)
    ping()
    refund(req: Order) returns (resp: Receipt)
}
