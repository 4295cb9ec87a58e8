"""Planning: search the runtime's knobs for the best configuration that fits, and say how fast it runs."""
