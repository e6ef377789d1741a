"""The built-in scripted agent: a tiny terminal program that behaves like an agent CLI."""
