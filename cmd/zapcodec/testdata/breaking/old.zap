# zapcodec breaking's test: the old side (new.zap is this schema edited).
package shop

type sku = bytes_fixed[8]

struct Item
    SKU    sku
    Count  u32
    Note   text

struct Order
    ID     u64
    Items  list<Item>
    Total  u32
    Flags  u16

struct Receipt
    ID     u64
    Paid   bool

struct Legacy
    X u8

interface Shop {
    place(req: Order) returns (resp: Receipt)
    get(req: Order) returns (resp: Order)
    cancel(req: Order)
    ping()
}
