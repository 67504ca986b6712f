// Command coredns is the cluster DNS of the local test node (docs/node.md): upstream CoreDNS's server with only
// the plugins the node's Corefile uses (k8s/node.py). Upstream's own main package links every plugin (cloud
// DNS providers with their SDKs, etcd, dnstap, ...), which made this the slowest binary of a cold build.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	// The plugin chain's order, as in upstream's plugin.cfg (core/dnsserver/zdirectives.go), for these plugins.
	dnsserver.Directives = []string{"ready", "health", "errors", "loadbalance", "cache", "kubernetes"}
}

func main() {
	coremain.Run()
}
