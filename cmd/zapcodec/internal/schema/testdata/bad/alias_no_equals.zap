type a u8
