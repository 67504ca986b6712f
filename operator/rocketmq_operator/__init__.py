"""rocketmq-operator: runs Apache RocketMQ 5 broker replica groups with quorum writes.

Layers (checked by import-linter in `make test`): the core (`api`, `quorum`, `render`, `plan`) is pure;
`remoting` is a stdlib-only client of RocketMQ's protocol; `observe` turns answers into one state value;
`platforms.kubernetes` and `platforms.local` apply the same rendered plan; `spark` reads groups; `cli` ties it up.
"""

__version__ = "0.1.0"
