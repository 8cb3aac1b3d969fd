struct A {
} more
