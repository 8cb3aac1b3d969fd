package p
struct A
	X u8
