package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

type repState int

const (
	stateConnecting repState = iota // before its first admission
	stateReady                      // admitted: its connections get calls
	stateEjected                    // waiting out its back-off, or being probed
)

func (s repState) String() string {
	switch s {
	case stateReady:
		return "ready"
	case stateEjected:
		return "ejected"
	}
	return "connecting"
}

// replica is one address of the service. Its goroutine (run) dials its
// connections, probes it, ejects it and admits it again; callers only
// mark things (a connection gone, a failed call) and poke it.
type replica struct {
	c    *Client
	addr string
	kick chan struct{}
	// ctx ends when the replica is removed or the client closes: its
	// dials, probes and back-off end with it.
	ctx      context.Context
	cancel   context.CancelFunc
	removed  atomic.Bool           // no longer in the resolver's set
	fails    atomic.Int32          // calls in a row that failed
	ejectReq atomic.Bool           // fails reached the threshold
	lastFail atomic.Pointer[error] // the error of the call that set ejectReq
	// rejoined: admitted again after an ejection, and no call answered
	// since; the first answered call ends the row of ejections (ok).
	rejoined atomic.Bool
	// lat is its answers' average latency (P2C weighs it).
	lat latency

	// Under c.mu.
	weight    float64 // from the resolver (Endpoint.Weight), > 0
	conns     []*Conn // WithConnsPerReplica entries; nil: none
	state     repState
	tried     bool // admitted or ejected at least once (for Dial)
	ejections int  // in a row: the back-off doubles with each
	// passes counts the periodic health checks passed in a row since
	// the replica was last admitted; the second ends the row of
	// ejections (see passed).
	passes int
	// outage counts its back-offs cut short, since it was last admitted,
	// because no replica was ready and a call wanted one: the next one
	// is cut short after the outage's own back-off step (see backoff).
	outage  int
	lastErr error
	// backoffEnd is the now() at which its back-off ends, while it
	// backs off (0: it does not); resume is the end of the back-off of
	// the replica it stands for (see recallLocked), which run waits out
	// first; keepLat: its latency is that replica's, kept at its first
	// admission.
	backoffEnd int64
	resume     int64
	keepLat    bool
	// backoffDue: ejected, its back-off not begun yet (run is on its
	// way to it); false once wait began it, so that an ejected replica
	// whose back-off is over (being dialed and probed) is told from one
	// about to back off (see rememberLocked).
	backoffDue bool
}

// errDraining: the replica's health check says it is going away.
var errDraining = errors.New("cluster: replica is draining")

func newReplica(c *Client, addr string) *replica {
	r := &replica{c: c, addr: addr, kick: make(chan struct{}, 1), conns: make([]*Conn, c.o.connsPer)}
	r.ctx, r.cancel = context.WithCancel(c.ctx)
	return r
}

// remove marks the replica removed from the resolver's set and ends what
// it is waiting for (a dial, a probe, its back-off), so that a set that
// flaps does not leave a dial or a probe per removed replica running for
// the health timeout. Called with c.mu held.
func (r *replica) remove() {
	r.removed.Store(true)
	r.cancel()
	r.poke()
}

func (r *replica) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// ok notes a call the replica answered. The first one since the replica
// was admitted again ends its row of ejections.
func (r *replica) ok() {
	if r.fails.Load() != 0 {
		r.fails.Store(0)
	}
	if r.rejoined.Load() {
		c := r.c
		c.mu.Lock()
		if r.state == stateReady {
			r.endRowLocked()
		}
		c.mu.Unlock()
	}
}

// endRowLocked ends the admitted replica's row of ejections, so that its
// next ejection backs off from the first step again.
func (r *replica) endRowLocked() {
	r.ejections = 0
	r.rejoined.Store(false)
}

// passed notes a periodic health check the admitted replica passed. The
// second in a row since its admission ends its row of ejections: the two
// are a full health interval apart (the ticker starts afresh at the
// admission), a real period of health while it got calls. The first
// only follows the probe that admitted it, made before its connection
// got calls. A check passed while the replica's last call failed (its
// calls fail behind a healthy server: a handler's failure) is no pass
// for the row: its health says nothing of its calls, and only an
// answered call ends the row then (see ok), so that a replica that gets
// its failing calls slowly still backs off longer at each ejection.
func (r *replica) passed() {
	c := r.c
	c.mu.Lock()
	if r.state == stateReady {
		if r.fails.Load() != 0 {
			r.passes = 0
		} else if r.passes++; r.passes >= 2 {
			r.endRowLocked()
		}
	}
	c.mu.Unlock()
}

// notPassed notes a periodic health check that was no pass (it could not
// be made): the checks passed in a row start again.
func (r *replica) notPassed() {
	c := r.c
	c.mu.Lock()
	r.passes = 0
	c.mu.Unlock()
}

// failed notes a call that failed with err because of the replica. The
// failure that asks for an ejection keeps its error, which the ejection
// gives as the reason (see lastFail).
func (r *replica) failed(err error) {
	n := r.fails.Add(1)
	if after := r.c.o.ejectAfter; after > 0 && int(n) >= after && !r.ejectReq.Load() {
		e := err // on the heap only here, once per ejection asked for
		r.lastFail.Store(&e)
		r.ejectReq.Store(true)
		r.poke()
	}
}

// failuresErr is the reason of an ejection for failed calls: how many
// failed in a row, and the error of the one that asked for it.
func (r *replica) failuresErr() error {
	n := r.fails.Load()
	if p := r.lastFail.Load(); p != nil && *p != nil {
		return fmt.Errorf("cluster: %d calls in a row failed, the last with: %w", n, *p)
	}
	return fmt.Errorf("cluster: %d calls in a row failed", n)
}

// run is the replica's life: connect and probe, serve, check, eject and
// back off, until it is removed or the client closes.
func (r *replica) run() {
	c := r.c
	defer c.wg.Done()
	defer r.exit()
	defer r.cancel()
	health := time.NewTicker(c.o.healthInterval)
	defer health.Stop()
	// recheck: the last health check could not be made (its connection
	// broke, or went away): connect probes the connection it dials in
	// its place before that one gets calls, and that probe is the check.
	recheck := false
	c.mu.Lock()
	resume := r.resume
	c.mu.Unlock()
	if d := resume - now(); d > 0 && !r.wait(time.Duration(d)) {
		return // removed, or the client closed
	}
	for {
		if r.ctx.Err() != nil { // removed, or the client closed
			return
		}
		if r.ejectReq.Swap(false) {
			if r.ejectCapped(r.failuresErr()) {
				recheck = false
				if !r.backoff() {
					return
				}
				continue
			}
			r.fails.Store(0)
		}
		if hook := connectHook.Load(); hook != nil {
			(*hook)(r)
		}
		admitted, err := r.connect(recheck)
		recheck = false
		if admitted {
			// The health interval starts afresh at the admission: a
			// tick that came during the back-off, the dial or the probe
			// would otherwise check the replica at once, and the
			// checks are a full interval apart from the admission on.
			health.Reset(c.o.healthInterval)
		}
		if err != nil {
			if r.ctx.Err() != nil {
				return
			}
			if err != errEjected {
				r.eject(err)
			}
			if !r.backoff() {
				return
			}
			continue
		}
		select {
		case <-r.ctx.Done():
			return
		case <-r.kick:
		case <-health.C:
			err := r.check()
			if r.ctx.Err() != nil {
				return // the check was cut short: removed, or the client closed
			}
			if err == errNotChecked {
				r.notPassed()
				recheck = true
				continue
			}
			if err != nil {
				if !r.ejectCapped(err) {
					continue // held in by the cap: checked again at the next tick
				}
				if !r.backoff() {
					return
				}
				continue
			}
			r.passed()
		}
	}
}

// connect dials the connections the replica lacks (none yet, retired,
// going away, broken); a replica not admitted, or one whose health check
// could not be made (recheck), is probed on its first new connection
// before that connection gets calls, and admitted (kept) only when it is
// serving; an admitted replica whose check on its new connection fails
// is ejected as far as WithMaxEjected allows (errEjected), else kept in
// with that connection. admitted is true when it admitted the replica.
func (r *replica) connect(recheck bool) (admitted bool, err error) {
	c := r.c
	c.mu.Lock()
	ready := r.state == stateReady
	probe := !ready || recheck
	conns := slices.Clone(r.conns)
	c.mu.Unlock()
	for k, cn := range conns {
		if cn != nil && !cn.gone.Load() && !cn.rc.Draining() && !cn.rc.Closed() {
			continue
		}
		c.drop(cn)
		if cn != nil && (cn.rc.Draining() || cn.refused.Load() || cn.rc.Closed() && !cn.closedUs.Load()) && cn.lostAge < c.o.ejectBase {
			// Gone as soon as it came: back off rather than redial in a
			// loop (a server that sends go-away on every connection, or
			// refuses every call unrun). Its age is the one it had when
			// it was first seen lost, not now: a replica goroutine that
			// runs late must not find a connection lost at once old,
			// and redial it with no health check.
			return false, cn.lostErr(cn.lostAge)
		}
		ncn := &Conn{r: r}
		rc, err := r.dial(ncn)
		if err != nil {
			return false, err
		}
		made := time.Now()
		if probe {
			if err := r.probe(rc); err != nil {
				if !ready || rc.Closed() || r.ctx.Err() != nil {
					rc.Close()
					return false, err
				}
				// The check of an admitted replica, made again on its
				// new connection: ejected as far as WithMaxEjected
				// allows, else held in with this connection.
				if r.ejectCapped(err) {
					rc.Close()
					return false, errEjected
				}
			}
			probe = false
		}
		ncn.rc, ncn.born = rc, time.Now()
		c.mu.Lock()
		if c.closed || r.removed.Load() {
			c.mu.Unlock()
			rc.Close()
			return false, errors.New("cluster: replica removed")
		}
		if age := max(time.Since(made), 1); (rc.Draining() || rc.Closed()) && age < c.o.ejectBase {
			// Lost before it got a call (its server went away or
			// closed it during the health check), sooner than the
			// ejection base: lost at once, as above. Its loss told the
			// client (see Client.lost), which left it to this look; a
			// later one is put in, and replaced at the run loop's kick.
			c.mu.Unlock()
			rc.Close()
			return false, ncn.lostErr(age)
		}
		r.conns[k] = ncn
		if r.state == stateReady {
			c.publishLocked()
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.state != stateReady && !c.closed && !r.removed.Load() {
		r.state, r.tried = stateReady, true
		r.passes, r.outage = 0, 0
		// Its latency before the ejection (often the reason for it)
		// says nothing of the replica now; one the resolver dropped and
		// gave again while it was admitted keeps its own.
		if !r.keepLat {
			r.lat.reset()
		}
		r.keepLat = false
		r.rejoined.Store(r.ejections > 0)
		// Calls that failed before it was admitted (late answers on the
		// connections of its last ejection) do not count against it.
		r.fails.Store(0)
		r.ejectReq.Store(false)
		c.publishLocked()
		c.checkFirstLocked()
		return true, nil
	}
	return false, nil
}

// lostErr is the error of a connection lost at once, age after it was
// made. Going away comes first: a call that met the go-away before it
// was written marked the connection refused too, and "refused a call
// unrun" is the sign of a server that refuses calls with no go-away
// (broken or hostile).
func (cn *Conn) lostErr(age time.Duration) error {
	why := "lost"
	switch {
	case cn.rc.Draining():
		why = "went away"
	case cn.refused.Load():
		why = "refused a call unrun"
	}
	return fmt.Errorf("cluster: connection %s %v after it was made", why, age.Round(time.Millisecond))
}

// dial dials a connection to the replica for cn, whose stream observer
// counts the ends of its streams (see Conn.streamEnded), and which tells
// the client as soon as it takes no new calls (see Client.lost); they
// are given before the options of WithClientOptions, so that they run
// first and a stream observer of the caller's runs after (rpc calls
// every stream observer given, in order). The connection keeps its
// method names in the cluster's table.
func (r *replica) dial(cn *Conn) (*rpc.Client, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.c.o.healthTimeout)
	defer cancel()
	opts := make([]rpc.ClientOption, 0, 3+len(r.c.o.clientOpts))
	opts = append(opts, rpc.WithStreamObserver(cn.streamEnded))
	opts = append(opts, rpc.WithOnClosing(func(*rpc.Client) { r.c.lost(cn) }))
	opts = append(opts, r.c.o.clientOpts...)
	// The cluster's names, last: the generated clients made on the
	// cluster add theirs to its table, which the connections share.
	opts = append(opts, rpc.WithMethodNames(r.c.MethodNames()))
	return rpc.Dial(ctx, r.c.o.network, r.addr, opts...)
}

// probe asks rc for the replica's health: nil when it is serving (or
// cannot say: a server without the health service answers 404 for the
// server as a whole, see WithHealthService). Any other status fails the
// check, rpc.HealthUnknown included (a zapcodec server answers the status
// set, unknown too, and 404 only for a service it never knew).
func (r *replica) probe(rc *rpc.Client) error {
	ctx, cancel := context.WithTimeout(r.ctx, r.c.o.healthTimeout)
	defer cancel()
	st, err := rpc.CheckHealth(ctx, rc, r.c.o.healthService)
	if err != nil {
		if r.c.o.healthService == "" && rpc.Code(err) == rpc.StatusNotFound {
			return nil // another implementation: no health method
		}
		return fmt.Errorf("cluster: health check: %w", err)
	}
	switch st {
	case rpc.HealthServing:
		return nil
	case rpc.HealthDraining:
		return errDraining
	}
	return fmt.Errorf("cluster: health check: %s", st)
}

// errEjected: connect ejected the replica itself (see ejectCapped).
var errEjected = errors.New("cluster: replica ejected")

// errNotChecked: the periodic health check could not be made (see
// check).
var errNotChecked = errors.New("cluster: health check not made")

// check is the periodic health check of an admitted replica, on its
// least loaded connection. A check that cannot be made on a connection
// (it broke, while idle or during the check, or its server is going away)
// has that connection retired rather than the replica ejected, and
// returns errNotChecked: it is no pass (the row of ejections goes on),
// connect redials and makes the check on the new connection before that
// one gets calls: a failed dial ejects the replica, as at admission, and
// a failed probe does as far as WithMaxEjected allows, as a failed check
// does.
func (r *replica) check() error {
	c := r.c
	var cn *Conn
	var broken []*Conn
	c.mu.Lock()
	for _, x := range r.conns {
		switch {
		case x == nil || x.gone.Load():
		case x.rc.Closed():
			broken = append(broken, x)
		case cn == nil || x.load() < cn.load():
			cn = x
		}
	}
	c.mu.Unlock()
	for _, x := range broken {
		c.drop(x)
	}
	if cn == nil {
		return errNotChecked
	}
	err := r.probe(cn.rc)
	if errors.Is(err, errDraining) || errors.Is(err, rpc.ErrClosed) && cn.rc.Closed() {
		c.drop(cn)
		return errNotChecked
	}
	return err
}

// eject takes the replica out of the ready set and retires its
// connections; the caller then backs off.
func (r *replica) eject(err error) {
	r.c.mu.Lock()
	r.ejectLocked(err)
}

// ejectCapped ejects the admitted replica for err (failed calls, a failed
// health check), when that leaves enough replicas in (WithMaxEjected);
// false when it may not: the replica then stays in rotation, its count of
// failed calls starts again (run) and so do its health checks passed in
// a row.
func (r *replica) ejectCapped(err error) bool {
	c := r.c
	c.mu.Lock()
	if !c.mayEjectLocked(r) {
		r.passes = 0
		c.mu.Unlock()
		return false
	}
	r.ejectLocked(err)
	return true
}

// ejectLocked is eject with c.mu held; it unlocks it.
func (r *replica) ejectLocked(err error) {
	c := r.c
	r.tried = true
	r.lastErr = err
	c.lastErr = fmt.Errorf("%s: %w", r.addr, err)
	if !c.closed && !r.removed.Load() {
		r.state = stateEjected
		r.backoffDue = true
		r.ejections++
		c.ejections.Add(1)
	}
	for k, cn := range r.conns {
		c.retireLocked(cn)
		r.conns[k] = nil
	}
	c.publishLocked()
	c.checkFirstLocked()
	c.mu.Unlock()
	// Whatever its reason, this ejection answers the failed calls too:
	// their request must not eject the replica again once it is back.
	r.fails.Store(0)
	r.ejectReq.Store(false)
	c.askResolve()
}

// backoff waits out the ejection; false when the replica was removed or
// the client closed meanwhile.
//
// While no replica is ready and a call wants one (it found none since the
// back-off began, or waits for one: WithWaitForReady), the back-off ends
// early, once the outage's own step has passed: the first step of a
// back-off (WithEjection's base, ±20 %) for the replica's first back-off
// cut short since it was last admitted, doubling with each one after it
// up to WithEjection's cap, ±20 % each. After an outage of every
// replica, the first one back is found within a step of the outage's own
// back-off (about as long as the outage has lasted, at most the cap),
// not after the back-off its row of ejections had grown to before (up
// to 30 s by default, however short the outage), and a replica still
// down is dialed as the back-off allows, and only while calls want one:
// a dial per base at first, then fewer (it was a dial per base for as
// long as the outage lasted, twice a second per replica by default).
// With a replica ready, the back-offs run in full.
func (r *replica) backoff() bool {
	c := r.c
	c.mu.Lock()
	n := r.ejections
	c.mu.Unlock()
	return r.wait(jitter(backoffFor(n, c.o.ejectBase, c.o.ejectMax)))
}

// wait is backoff's wait of d, cut short in an outage as backoff says.
func (r *replica) wait(d time.Duration) bool {
	c := r.c
	start := now()
	c.mu.Lock()
	o := r.outage
	r.backoffDue = false
	r.backoffEnd = start + int64(d)
	if r.backoffEnd < start { // past the longest time: ends never
		r.backoffEnd = math.MaxInt64
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		r.backoffEnd = 0
		c.mu.Unlock()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	var early <-chan time.Time
	step := jitter(backoffFor(o+1, c.o.ejectBase, c.o.ejectMax))
	if step < d {
		e := time.NewTimer(step)
		defer e.Stop()
		early = e.C
	}
	if backoffHook != nil {
		backoffHook(r.addr, min(step, d))
	}
	var want chan struct{} // closed at a call's want; nil: not watched yet
	for {
		select {
		case <-r.ctx.Done(): // removed, or the client closed
			return false
		case <-t.C:
			// The outage's step, shorter, passed before the back-off's
			// length: with a call wanting a replica, the back-off is
			// cut short by the outage (the next one's step doubles)
			// whichever timer this select took. A goroutine that runs
			// late finds both fired, and took this one at random.
			if step < d {
				c.mu.Lock()
				if c.wantedLocked(start) {
					r.outage++
				}
				c.mu.Unlock()
			}
			return r.ctx.Err() == nil
		case <-r.kick:
			continue
		case <-early:
			early = nil
		case <-want:
		}
		c.mu.Lock()
		if c.wantedLocked(start) {
			r.outage++
			c.mu.Unlock()
			return r.ctx.Err() == nil
		}
		want = c.wantCh
		c.wantWatched = true
		c.mu.Unlock()
	}
}

// goneReplica is what the client remembers of a replica the resolver
// dropped, for a resolver that flaps (drops an address and gives it again
// a moment later): its row of ejections and what remains of its back-off,
// and its latency when it was admitted. Without it, a replica ejected
// for failing came back as a fresh one, dialed and admitted at once.
type goneReplica struct {
	until      int64 // the now() up to which it is remembered
	ejections  int
	backoffEnd int64 // see replica.backoffEnd
	lastErr    error
	ready      bool // admitted: its latency holds
	avg        uint64
	at         int64
	seen       int32
}

// rememberLocked notes what r, which the resolver dropped, was: for the
// back-off's cap (or to the end of its back-off, if later), and at most
// for as many addresses as WithMaxReplicas allows (the oldest
// forgotten first; the expired ones at once), so that a resolver that
// rotates addresses costs a bounded memory.
func (c *Client) rememberLocked(r *replica) {
	t := now()
	if c.gone == nil {
		c.gone = make(map[string]goneReplica)
	}
	if len(c.gone) >= c.o.maxReplicas {
		oldest, first := "", true
		for a, g := range c.gone {
			if g.until <= t {
				delete(c.gone, a)
			} else if first || g.until < c.gone[oldest].until {
				oldest, first = a, false
			}
		}
		if len(c.gone) >= c.o.maxReplicas {
			delete(c.gone, oldest)
		}
	}
	until := t + int64(c.o.ejectMax)
	if until < t {
		until = math.MaxInt64
	}
	end := r.backoffEnd
	switch {
	case end != 0:
	case r.backoffDue:
		// Ejected, its back-off not begun yet (run is on its way to
		// it): the back-off it was about to begin, from now.
		end = t + int64(backoffFor(r.ejections, c.o.ejectBase, c.o.ejectMax))
		if end < t {
			end = math.MaxInt64
		}
	default:
		// Not backing off: its back-off is over (it is being dialed
		// and probed, or admitted), or, for one given again, run has
		// not begun the rest of the back-off it took over (resume; in
		// the past once waited out).
		end = r.resume
	}
	g := goneReplica{
		until:      max(until, end),
		ejections:  r.ejections,
		backoffEnd: end,
		lastErr:    r.lastErr,
		ready:      r.state == stateReady,
	}
	if g.ready {
		g.avg, g.at, g.seen = r.lat.avg.Load(), r.lat.at.Load(), r.lat.seen.Load()
	}
	c.gone[r.addr] = g
}

// recallLocked gives r, new for an address the resolver gives again,
// what the client remembers of the replica it dropped there: its row of
// ejections, the rest of its back-off (run waits it out before it dials)
// and, when it was admitted, its latency. Called before r runs.
func (c *Client) recallLocked(r *replica) {
	g, ok := c.gone[r.addr]
	if !ok {
		return
	}
	delete(c.gone, r.addr)
	t := now()
	if g.until <= t {
		return
	}
	r.ejections, r.lastErr = g.ejections, g.lastErr
	if g.backoffEnd > t {
		r.state, r.tried, r.resume = stateEjected, true, g.backoffEnd
	}
	if g.ready {
		r.lat.avg.Store(g.avg)
		r.lat.at.Store(g.at)
		r.lat.seen.Store(g.seen)
		r.keepLat = true
	}
}

// connectHook, when a test sets it, is called by the replica's goroutine
// before each connect; atomic because the replicas of clients other
// tests left may read it while a test sets it.
var connectHook atomic.Pointer[func(r *replica)]

// backoffHook, when a test sets it, is told of each back-off of the
// replica of addr as it begins: wait is how long it lasts at most while
// calls want a replica and none is ready (its full length otherwise).
var backoffHook func(addr string, wait time.Duration)

// backoffFor returns the back-off of the n-th ejection in a row: base,
// doubling with each ejection after the first, at most most. It doubles
// step by step, so that no base overflows.
func backoffFor(n int, base, most time.Duration) time.Duration {
	d := min(base, most)
	for i := 1; i < n && d < most; i++ {
		if d > most/2 {
			return most
		}
		d *= 2
	}
	return d
}

// jitter returns d give or take up to 20 %, at most the longest Duration.
func jitter(d time.Duration) time.Duration {
	f := float64(d) * (0.8 + 0.4*rand.Float64())
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(f)
}

// exit retires the replica's connections and forgets it.
func (r *replica) exit() {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, cn := range r.conns {
		c.retireLocked(cn)
		r.conns[k] = nil
	}
	r.tried = true
	if c.replicas[r.addr] == r {
		delete(c.replicas, r.addr)
	}
	c.publishLocked()
	c.checkFirstLocked()
}

// mayEjectLocked reports whether r may be ejected (for failed calls or a
// failed health check): at most maxEjectedOf(n) of the n replicas
// (removed ones aside) may be out at once, r included, whatever took the
// others out (a replica that cannot be reached counts; it is out
// whatever the share, having no connection to keep in rotation).
func (c *Client) mayEjectLocked(r *replica) bool {
	total, out := 0, 0
	for _, x := range c.replicas {
		if x.removed.Load() {
			continue
		}
		total++
		if x.state == stateEjected && x != r {
			out++
		}
	}
	return out+1 <= maxEjectedOf(total, c.o.maxEjected)
}

// maxEjectedOf returns how many of n replicas ejections may keep out at
// once with the share WithMaxEjected gives: share × n rounded down, at
// least 1. A product a hair under a whole number in floating point (0.29
// × 100 = 28.999…) counts as that number.
func maxEjectedOf(n int, share float64) int {
	return max(1, int(math.Floor(share*float64(n)+1e-9)))
}
