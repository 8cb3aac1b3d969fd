type a = list<Nope>
