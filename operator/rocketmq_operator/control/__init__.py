"""Talks to running groups: `observe` (one `GroupState` per group), `operations` (the replication-policy
executor: fence, elect, switchover, re-attach) and `topics` (topic re-assertion). Platforms call these; they
decide nothing themselves."""
