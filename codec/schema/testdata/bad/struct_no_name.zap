struct {
}
