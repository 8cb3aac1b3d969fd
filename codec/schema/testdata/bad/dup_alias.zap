type a = u8
type a = u16
