package agentstream

import (
	"context"
	"strings"
	"testing"
)

// The harness's parent is its supervisor. Linked with the shared library, that is
// libagentstream run as a program (its command line names the library and the supervisor
// marker), not a fork of this Go process; linked statically, there is no library to run and
// the supervisor is a fork, named but with this test binary's command line.
func TestTheSupervisorIsTheLibraryRunAsAProgramUnlessLinkedStatically(t *testing.T) {
	c := commandClient(t)
	var rec recorder
	rec.attach(t, c)
	res, err := c.Run(context.Background(), RunOptions{
		Command: []string{"sh", "-c", `tr '\0' ' ' < /proc/$PPID/cmdline; echo; cat /proc/$PPID/comm`},
	})
	if err != nil || res.State != RunCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	lines := strings.Split(rec.text(ChannelStdout), "\n")
	if len(lines) < 2 || lines[1] != "agentstream-sup" {
		t.Fatalf("%q", lines)
	}
	execd := strings.Contains(lines[0], "libagentstream") && strings.Contains(lines[0], "--agentstream-supervisor-1")
	if execd == linkedStatically {
		t.Fatalf("linked statically: %v; the supervisor's command line: %q", linkedStatically, lines[0])
	}
}
