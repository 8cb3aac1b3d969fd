package p
interface S { get(req: u32) }
