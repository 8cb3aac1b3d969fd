struct A
	X u8
    Y u8
