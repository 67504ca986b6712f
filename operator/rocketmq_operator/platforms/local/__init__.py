"""The local platform: the same BrokerGroup/ControllerGroup manifests as real RocketMQ processes on 127.0.0.1.

Contract (see each module's docstring for its own):

* `rocketmq-operator local up|status|down|kill|start|apply|dist-path` (`cli`) is the user interface; `control`
  (and `apply` for `local apply`) holds the logic behind it and is what tests call; `roll` is the supervisor's side
  of a roll.
* Configs come from `rocketmq_operator.render.config`, the renderers the Kubernetes platform uses; `placement`
  supplies only what differs locally: 127.0.0.1 addresses, ports (`ports`) and paths under the state directory
  (`layout`), plus small-footprint platform defaults.
* One detached `supervisor` process per state directory starts, restarts (with `backoff`) and stops the java
  processes, and is the only writer of `state.json` (`state`) while it runs. The CLI talks to it through request
  files (`commands`) and SIGTERM.
* No module keeps cluster state in globals: everything a command needs is read from the state directory.
"""
