// Command pause is the sandbox process of every pod on the local test node (docs/node.md).
//
// It holds the pod's namespaces open, does nothing else, reaps zombies (it is PID 1 when the pod shares
// its process namespace) and exits 0 on SIGINT or SIGTERM. `pause -v` prints the version.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const version = "rocketmq-operator-pause 1.0"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println(version)
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "warning: pause should be PID 1 of a pod sandbox")
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "pause: %v, exiting\n", sig)
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
