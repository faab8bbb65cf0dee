"""pytest plugin (stub, filled in by the `perfmodel check` work): provides ``assert_perf``."""
