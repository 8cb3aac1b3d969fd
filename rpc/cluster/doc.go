// Package cluster is a client of a service that runs as several replicas
// behind one name: it resolves the name to the replicas' addresses, keeps
// multiplexed connections ([rpc.Client]) to them, spreads calls by load,
// ejects replicas that fail and sends again the calls a replica refused
// without running them. Its [Client] implements [rpc.Caller],
// [rpc.Sender] and [rpc.StreamOpener], so generated clients work on it:
//
//	c, err := cluster.Dial(ctx, "dns:///eth.svc.cluster.local:7700")
//	if err != nil { ... } // only a target it cannot read
//	defer c.Close()
//	eth := ethzap.NewEthClient(c)
//
// Dial does not fail when no replica is up yet, or the name does not
// resolve yet: the client keeps trying in the background, and calls fail
// with [ErrNoReplica] (or wait, [WithWaitForReady]) until a replica is
// admitted. [Client.WaitReady] waits, within a ctx, until a number of
// replicas, or all those the resolver names, are admitted.
//
// It replaces rpc.Pool (a fixed list of addresses, round robin, no
// re-resolution); a fixed list is still possible ("static:///a:1,b:2",
// or [Static]). It is a package of its own, built on rpc's exported API
// only, so that rpc stays the one-connection API a service author reads,
// and so that its name cannot be confused with package pool (buffers).
//
// Resolution: a target names a [Resolver] ([ParseTarget]): "dns:///host:port"
// (A and AAAA records), "dns+srv:///_zap._tcp.name" (SRV records of the
// lowest priority, their weights honoured as RFC 2782 says: a
// [WeightedResolver] gives each address a weight, and the balancers
// give it a share of the calls in proportion),
// "static:///...". A polled resolver is asked again every [WithRefresh]
// and soon after a connection fails; a [Watcher] (a service registry, or
// [Push]) pushes its changes instead, a [WeightedWatcher] with weights
// (and is polled once its Watch has returned).
// Only the standard library's net.Resolver is used; a DNS server can be
// named in the target ("dns://10.0.0.2:53/name:port"). A set of more
// addresses than [WithMaxReplicas] allows (1024 by default) is refused
// as a failed resolution is. A replica whose address a resolution drops
// is remembered for the ejection back-off's cap ([WithEjection], or to
// the end of its own back-off if later; at most as many as
// WithMaxReplicas, the oldest forgotten first): given again meanwhile (a
// resolver that flaps), it keeps its row of ejections, waits out the
// rest of its back-off, and keeps its latency when it was admitted,
// rather than coming back as a fresh replica.
//
// Balancing: [P2C] (default) draws two connections and gives the call to
// the cheaper: the one with the lower load (calls in flight, open streams
// and outstanding promises: [Conn.Load]), unless one's latency × (load +
// 1) is more than twice the other's ([Conn.Latency]: the replica's
// average answer latency), so that a much slower replica gets few calls
// even from a caller that makes one at a time; [RoundRobin] ignores load
// and latency; any
// [Balancer] can be plugged in. [WithConnsPerReplica] keeps several
// connections per replica.
//
// Health: every replica is dialed and asked for its health
// ([rpc.CheckHealth] on [rpc.HealthMethod]) before it gets calls, then
// checked every [WithHealthCheck] interval. A replica whose connection
// breaks and cannot be redialed, that fails [WithEjection] calls in a row,
// or that fails or times out a health check, is ejected: it gets no call
// for a back-off (doubling with each ejection in a row: the row ends when
// it answers a call, or passes two health checks in a row once admitted
// again, a full interval of health between them, while its calls do not
// fail (a check passed after a failed call, with no call answered since,
// is no pass for the row); while no replica is
// ready and calls want one, the back-off ends once the outage's own
// step has passed, the first step at the outage's first redial,
// doubling with each redial after it up to the cap, so that the first
// replica back after an outage of all is found within about as long as
// the outage lasted, not after the row's back-off, and replicas still
// down are not redialed at the first step's pace), then is dialed and
// probed again, and admitted only
// when serving. A call fails when its answer is 500 and above (a handler's
// failure) or 404 "no such method" ([rpc.IsNoSuchMethod]: a replica
// deployed without it; a handler's own 404 does not count), when
// its deadline passes while the replica has it (a wedged handler, whose
// health check may pass, or one that stopped reading: a call that waited
// until its deadline for room in its connection's full write queue
// counts so too, see [Client.Call]), or when its connection breaks (once, however
// many calls were on it); other 4xx answers, a canceled ctx and a
// deadline that had passed before the call was sent are the caller's.
// A stream counts at its end, as gRPC's outlier detection counts a
// stream by its final status: an error end of 500 and above (but the
// 503 of a server going away, and its 503 "too many open streams": a
// full replica is not a failing one; an open refused unrun by a server
// going away has its connection replaced at once, as a call refused so
// does) or 404 "no such stream method" is a
// failed call, a clean end or another 4xx an answered one, a broken
// connection a failure once; a stream canceled by its caller or ended
// by its deadline counts nothing (see [Client.OpenStream]).
// Failed calls and failed health checks may keep at most half of the
// replicas ejected at once ([WithMaxEjected]; at least one), so that a
// failure they all share (a database down, replicas too busy to answer
// their checks in time) does not take the service out: a replica the cap
// holds back stays in rotation, its calls failing with its own errors
// rather than [ErrNoReplica], and is ejected once it fails as many calls
// in a row, or a check, again and the share allows. Only a replica that
// cannot be reached (no connection to it can be dialed, or one is lost as
// soon as it is made) is out whatever the share, having no connection to
// keep in rotation, and counts toward it. A
// connection that breaks while its replica is up is redialed, the
// replica not ejected. A health check that finds its connection broken
// or going away is no pass (the row of ejections goes on): it is made
// again on the redialed connection before that one gets calls, and
// fails as any check does. A replica that sends go-away
// ([rpc.Server.Shutdown]) gets no new call from the moment the client
// reads it; its calls in flight finish on the old connection while a new
// one is dialed (a restarted server is admitted again once it answers its
// health check). The new one is dialed as the connection reads the
// go-away, or finds itself closed or broken ([rpc.WithOnClosing]), even
// with no call on it: the next call finds it ready, not lost. A
// connection lost sooner than the first ejection back-off after it was
// made (it went away, the server closed it, or it refused a call or a
// stream's open unrun) ejects its replica rather than being redialed in a loop (one lost
// during its health check is not admitted); its age is taken when the
// client saw it lost, not when the replica gets to redial it.
//
// Retries: without a retry policy, only a call the server certainly did
// not run ([rpc.IsRetryable]: refused with the not-run flag because it
// was going away) is sent again, once, on another connection, and only
// while the caller's ctx is live and the retry budget ([WithRetryBudget]:
// 10 % of calls plus 10 a second by default) allows, so retries cannot
// multiply the load of an outage; a retry that finds no replica ready is
// not sent and takes nothing from the budget. A call refused unrun by a
// server that had sent its go-away first (the call crossed the go-away:
// [rpc.Server.Shutdown], rpc.WithMaxConnectionAge) is no retry: it goes
// to another connection as one that met the go-away before it was
// written does, up to four times in all, counted in neither the retries
// nor the budget, so that a call crossing the go-aways of two
// connections at once (made together, aging out together) does not
// fail. A call that may have run (a
// handler's answer, a broken connection, a ctx error) is not sent again,
// unless a [RetryPolicy] given for its method ([WithRetryPolicy], gRPC's
// retryPolicy) says so: up to its MaxAttempts, for the statuses it names
// (and a connection lost with the call on it, if it says ConnectionLost),
// each retry after a back-off with full jitter, to another replica, from
// the same budget, never past the ctx's deadline. A policy declares its
// methods safe to run twice; only unary calls ([Client.Call]) follow it.
//
// Hedging: a [HedgingPolicy] given for a method ([WithHedgingPolicy],
// gRPC's hedgingPolicy) sends its unary calls to one replica and, while
// no answer came, to another one each HedgingDelay (at once after an
// answer with one of its NonFatalStatuses), up to MaxAttempts (at most
// [MaxHedgingAttempts]) out at once, each hedge from the retry budget,
// never past the ctx's deadline; the first success or fatal answer is
// the call's, and the other attempts are canceled (their handlers' ctx
// ends). Each attempt writes its own buffer, and the winner's answer is
// copied into the caller's, and so is its response metadata
// ([rpc.WithResponseMetadata]): nothing an attempt does after Call
// returned touches the caller's buffers or receiver. A method has a retry policy or a
// hedging policy, not both ([Dial] fails when both are given for it).
//
// Middleware: [WithInterceptors] and [WithStreamInterceptors] run once
// around a call (its retries and hedges included) or a stream's open; interceptors,
// stream interceptors and observers given to the connections
// ([WithClientOptions]) run once per attempt on the wire (a stream
// observer given there runs after the one with which each connection
// counts its streams' ends, which it does not replace).
//
// Costs: a warm call allocates nothing; beside the call on its
// connection it costs a few atomic operations (in-flight counts, the
// loads and latencies of two connections, the call counter, a look at
// the retry budget, the replica's latency after the answer; a retry
// policy is looked up only once a call failed, a hedging policy only
// when one was given), two reads
// of the monotonic clock (the call's start and end; a third when P2C finds one replica
// much slower, and one more for a ctx with a deadline: whether it has
// passed, see [Client.Call]) and two random numbers (with weights, two
// to four, and a binary search over the running sums of the weights).
// The words every call writes on every core are the in-flight count of
// its connection and the call counter (kept on a cache line apart from
// the words every call reads); a call deposits in the retry budget
// only while it is not full (the first few hundred calls of a client,
// and a few after each retry), and stores the replica's latency only
// when its answer moves it (see [Conn.Latency]).
package cluster
