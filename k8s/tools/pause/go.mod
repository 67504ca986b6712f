// The pod sandbox ("pause") program of the local node (docs/node.md); no dependencies.
module rocketmq-operator.dev/k8s-tools/pause

go 1.26.0
