"""rocketmq-operator: runs Apache RocketMQ 5 broker replica groups with quorum writes.

Layers (checked by import-linter in `make test`): `api`, `core` and `render` are pure; `remoting` is a
stdlib-only client of RocketMQ's protocol; `control` observes groups and carries decisions out;
`platforms.kubernetes` and `platforms.local` apply the same rendered plan; `spark` reads groups; `tools` and
`bench` produce, consume and measure; `cli` ties it up.
"""

__version__ = "0.1.0"
