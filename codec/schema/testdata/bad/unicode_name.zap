struct Å
