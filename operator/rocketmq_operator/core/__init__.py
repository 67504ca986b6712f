"""The pure core: per-mode quorum semantics (`quorum`, `explain`) and decisions (`status`, `failover`,
`conditions`, `topics`). Plain values in, actions and status out; no I/O, no clocks (time is an argument)."""
