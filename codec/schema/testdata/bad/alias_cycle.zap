type a = b
type b = c
type c = a
