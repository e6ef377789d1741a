"""`baton serve`: the CAO-compatible HTTP API over agent CLIs running in a private tmux."""
