"""`baton batch`: many features at once, each a `baton run` in its own git worktree and branch."""
