# The record the build benchmark of issue 14 measures: a nested struct, a
# list of structs and a text (internal/gentest/order).
package order

# Item is one line of an order.
struct Item
    SKU   u64
    Qty   u32
    Name  text

# Address is where an order goes.
struct Address
    Zip   u32
    City  text

# Order is what a customer bought.
struct Order
    ID       u64
    Customer text
    Ship     Address
    Items    list<Item>
