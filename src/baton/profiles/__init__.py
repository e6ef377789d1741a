"""The five built-in role profiles, as markdown files with front matter."""
