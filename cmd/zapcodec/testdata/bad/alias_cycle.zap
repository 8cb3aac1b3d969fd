package p
type a = b
type b = a
