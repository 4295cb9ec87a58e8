"""Planning: the best configuration that fits, its speed, and the command to run it."""
