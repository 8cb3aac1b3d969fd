interface S
    ping()
