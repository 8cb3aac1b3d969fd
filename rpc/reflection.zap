# The reflection service of package rpc (method ordinal
# rpc.ReflectionMethod, named rpc.ReflectionMethodName,
# "/rpc.Reflection/list"), served by a server made with
# rpc.WithReflection. The request is empty.
package rpc

# The answer: every service mounted on the server, in the order mounted.
struct ReflectionResponse
    Services list<ReflectedService>

# One mounted service.
struct ReflectedService
    Name    text  # the name it was mounted under ("greet.Greeter")
    Base    u32   # its mount offset (rpc.At): method k is at ordinal Base+k
    Methods u32   # how many methods it has: ordinals Base+1..Base+Methods
    Schema  text  # its .zap source (rpc.WithSchema), "" when none was given
