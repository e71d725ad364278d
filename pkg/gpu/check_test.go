package gpu

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	base := Readings{Info: Info{UUID: "GPU-x", SlowdownTempC: 90}, TempC: 50,
		Processes: []Process{{Pid: 100, UsedMemory: 80 << 30}}}
	with := func(f func(*Readings)) Readings {
		r := base
		r.Processes = append([]Process(nil), base.Processes...)
		f(&r)
		return r
	}
	notOurs := func(pid int) bool { return pid < 1000 }
	tests := map[string]struct {
		r      Readings
		e      Expect
		fatal  []string // substrings of fatal problems, in order
		others []string // substrings of non-fatal problems
	}{
		"healthy":               {base, Expect{InferPid: 100}, nil, nil},
		"process check off":     {with(func(r *Readings) { r.Processes = nil }), Expect{}, nil, nil},
		"infer missing":         {with(func(r *Readings) { r.Processes = []Process{{Pid: 7, UsedMemory: 1 << 20}} }), Expect{InferPid: 100}, []string{"infer (pid 100) holds no context", "7 (1 MiB)"}, nil},
		"no processes at all":   {with(func(r *Readings) { r.Processes = nil }), Expect{InferPid: 100}, []string{"compute processes: none"}, nil},
		"shared device":         {with(func(r *Readings) { r.Processes = append(r.Processes, Process{Pid: 55}) }), Expect{InferPid: 100}, nil, []string{"other processes share GPU-x: 55"}},
		"foreign pid namespace": {with(func(r *Readings) { r.Processes = []Process{{Pid: 424242}} }), Expect{InferPid: 100, PidVisible: notOurs}, nil, []string{"cannot verify"}},
		"processes unsupported": {with(func(r *Readings) { r.Processes = nil; r.Unsupported = []string{"processes"} }), Expect{InferPid: 100}, nil, []string{"cannot list"}},
		"critical xid":          {with(func(r *Readings) { r.Events = []Event{{Kind: EventXID, XID: 79}} }), Expect{InferPid: 100}, []string{"XID 79 (GPU has fallen off the bus)"}, nil},
		"application xid":       {with(func(r *Readings) { r.Events = []Event{{Kind: EventXID, XID: 13}} }), Expect{InferPid: 100}, nil, []string{"XID 13"}},
		"double-bit event":      {with(func(r *Readings) { r.Events = []Event{{Kind: EventECCDoubleBit}} }), Expect{}, []string{"double-bit ECC"}, nil},
		"ecc increase":          {with(func(r *Readings) { r.ECCUncorrectedAtOpen, r.ECCUncorrected = 2, 5 }), Expect{}, []string{"3 new uncorrected ECC errors"}, nil},
		"old ecc errors only":   {with(func(r *Readings) { r.ECCUncorrectedAtOpen, r.ECCUncorrected = 2, 2 }), Expect{}, nil, nil},
		"remap failed":          {with(func(r *Readings) { r.RemapFailed, r.RemapPending = true, true }), Expect{}, []string{"row remapping failed"}, nil},
		"remap pending":         {with(func(r *Readings) { r.RemapPending = true }), Expect{}, nil, []string{"needs a reset"}},
		"hot":                   {with(func(r *Readings) { r.TempC = 91 }), Expect{}, nil, []string{"91°C"}},
		"threshold unknown":     {with(func(r *Readings) { r.TempC, r.SlowdownTempC = 120, 0 }), Expect{}, nil, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var fatal, others []string
			for _, p := range Check(tc.r, tc.e) {
				if p.Fatal {
					fatal = append(fatal, p.What)
				} else {
					others = append(others, p.What)
				}
			}
			// Each case expects at most one problem of each kind; want lists
			// substrings that problem must mention.
			match := func(kind string, got, want []string) {
				if len(want) == 0 && len(got) != 0 || len(want) > 0 && len(got) != 1 {
					t.Errorf("%s problems %q, want %d matching %q", kind, got, min(len(want), 1), want)
					return
				}
				for _, w := range want {
					if !strings.Contains(got[0], w) {
						t.Errorf("%s problem %q does not mention %q", kind, got[0], w)
					}
				}
			}
			match("fatal", fatal, tc.fatal)
			match("non-fatal", others, tc.others)
		})
	}
}

func TestXIDName(t *testing.T) {
	if XIDName(79) != "GPU has fallen off the bus" || !strings.Contains(XIDName(999), "catalogue") {
		t.Errorf("XIDName: %q, %q", XIDName(79), XIDName(999))
	}
}
