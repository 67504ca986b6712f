"""Talks to running groups, and mirrors `core`: the `core` module of a concern decides, the `control` module of the
same name executes. `observe` (one `GroupState` per group, and the facts `core.failover` decides on), `fence` (the
fence's keys and the user's fences: `core.fence`), `switchover` (the one switchover: `core.failover`), `policy`
(the replication-policy pass: fence deposed masters, fail over, re-attach, re-register: `core.failover`), `routes`
(name-server routes and slave re-attachment, for both), `waits` (asking a broker again until it answers as wanted),
`roll` (`core.roll`), `topics` (topic re-assertion: `core.topics`) and `auth` (`core.auth`). Platforms call these;
they decide nothing themselves."""
