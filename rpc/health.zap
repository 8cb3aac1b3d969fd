# The health service of package rpc (method ordinal rpc.HealthMethod,
# named rpc.HealthMethodName, "/rpc.Health/check").
package rpc

struct HealthCheckRequest
    Service text

struct HealthCheckResponse
    Status u32
