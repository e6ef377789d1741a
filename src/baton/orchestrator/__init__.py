"""`baton run`: the orchestrator half — drives five agent terminals over a CAO-compatible API.

The round/phase machine (`loop`, `phases`, one agent turn in `turns`), the prompts it
composes (`prompts`, `composer`, `review`), the file handoff (`handoff`, `response_files`,
`archive`, `watchers`), the run state (`state`) and the settings (`config*`) live here;
nothing in this package imports the server.
"""
