# The health service of package rpc (method ordinal rpc.HealthMethod).
package rpc

struct HealthCheckRequest
    Service text

struct HealthCheckResponse
    Status u32
