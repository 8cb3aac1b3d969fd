struct R {}
interface S
    ping() pong()
