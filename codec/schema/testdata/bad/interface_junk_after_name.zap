struct R {}
interface S ping()
