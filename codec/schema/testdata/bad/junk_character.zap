struct A $
