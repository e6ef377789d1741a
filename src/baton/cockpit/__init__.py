"""The operator's views of a run: `baton watch`, `baton report`, `baton status`,
and the commands that reach an agent (`baton answer`, `baton attach`)."""
