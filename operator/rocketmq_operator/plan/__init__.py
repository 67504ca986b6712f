"""Pure decision functions: plain state in, actions and status out. No I/O, no clocks (time is an argument)."""
