package shm

import (
	"fmt"
	"os"
	"time"
)

// Role indexes Header.Roles.
type Role uint32

// The roles of an instance. The values are part of the layout.
const (
	RoleSupervisor Role = iota
	RoleAPIServer
	RoleRouter
	RoleDetokenizer
	RoleInfer
	RoleMetric
	RoleHealth
	numRoles
)

var roleNames = [numRoles]string{"supervisor", "apiserver", "router", "detokenizer", "infer", "metric", "health"}

func (r Role) String() string {
	if r < numRoles {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", uint32(r))
}

// ParseRole maps a role name ("router", "infer", ...) to its Role.
func ParseRole(name string) (Role, error) {
	for i, n := range roleNames {
		if n == name {
			return Role(i), nil
		}
	}
	return 0, fmt.Errorf("%q: %w", name, ErrBadRole)
}

// Role returns the liveness record of role.
func (r *Region) Role(role Role) (*RoleState, error) {
	if role >= numRoles {
		return nil, fmt.Errorf("%v: %w", role, ErrBadRole)
	}
	return &r.hdr.Roles[role], nil
}

// BeginEpoch records that this process now plays role and returns the new
// epoch. Call it once at start, after attaching and before serving: peers
// compare epochs to notice a restart (an infer whose epoch changed has lost
// its running requests; an apiserver whose epoch changed has lost its
// connections).
func (r *Region) BeginEpoch(role Role) (uint32, error) {
	rs, err := r.Role(role)
	if err != nil {
		return 0, err
	}
	now := time.Now().UnixNano()
	rs.Pid.Store(uint32(os.Getpid()))
	rs.StartedUnixNano.Store(now)
	rs.HeartbeatUnixNano.Store(now)
	return rs.Epoch.Add(1), nil
}

// Beat records a heartbeat now.
func (rs *RoleState) Beat() { rs.HeartbeatUnixNano.Store(time.Now().UnixNano()) }

// Since is how long ago the last heartbeat was, or -1 if there was none.
func (rs *RoleState) Since(now time.Time) time.Duration {
	hb := rs.HeartbeatUnixNano.Load()
	if hb == 0 {
		return -1
	}
	return now.Sub(time.Unix(0, hb))
}

// Bell is the doorbell of rs, a role of r (Role): others ring it when they
// publish something the role waits for (new tokens for the detokenizer, new
// text for the apiserver). It is a Region's method because a bell sleeps on
// its region's FIFOs; a RoleState from another region gets the futex alone
// (bellPipes finds no FIFO for a word outside its mapping).
func (r *Region) Bell(rs *RoleState) Bell {
	return Bell{seq: &rs.BellSeq, waiters: &rs.BellWaiters, pipes: r.pipes}
}
