interface S {
    get(req: u64)
}
