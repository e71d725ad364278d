package rolectl

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

// sdNotifier speaks systemd's notify protocol (sd_notify(3)): datagrams such
// as "READY=1" to the socket named by $NOTIFY_SOCKET. Written here rather
// than imported because it is a dozen lines.
type sdNotifier struct {
	addr     *net.UnixAddr
	watchdog time.Duration // WATCHDOG_USEC, 0 when no watchdog is armed for us
}

// newSDNotifier returns nil when not started by systemd with Type=notify.
func newSDNotifier() *sdNotifier {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	if path[0] == '@' { // abstract namespace
		path = "\x00" + path[1:]
	}
	n := &sdNotifier{addr: &net.UnixAddr{Name: path, Net: "unixgram"}}
	if us, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64); err == nil && us > 0 {
		pid, perr := strconv.Atoi(os.Getenv("WATCHDOG_PID"))
		if perr != nil || pid == os.Getpid() {
			n.watchdog = time.Duration(us) * time.Microsecond
		}
	}
	return n
}

func (n *sdNotifier) notify(state string) error {
	if n == nil {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify %s: %w", state, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify %s: %w", state, err)
	}
	return nil
}

// NotifySystemd sends one sd_notify state ("READY=1", "STOPPING=1", ...) when
// $NOTIFY_SOCKET is set, and does nothing otherwise. The supervisor uses it
// when `lightllm launch` itself runs as a Type=notify unit.
func NotifySystemd(state string) error { return newSDNotifier().notify(state) }
