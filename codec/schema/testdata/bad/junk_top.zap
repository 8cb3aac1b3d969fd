message A {}
