interface S {
    ping
}
