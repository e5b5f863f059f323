"""The imperative shell: the daemon's pass, steps (one transaction each), message handling,
overrides and the admin's writes. The only layer that reads the clock, the store and the ports."""
