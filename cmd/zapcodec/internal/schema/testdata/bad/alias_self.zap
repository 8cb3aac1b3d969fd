type a = list<a>
