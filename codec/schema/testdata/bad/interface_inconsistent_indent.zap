struct R {}
interface S
    ping()
     get(req: R)
