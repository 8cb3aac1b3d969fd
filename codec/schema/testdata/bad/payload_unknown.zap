interface S {
    get(req: Nope)
}
