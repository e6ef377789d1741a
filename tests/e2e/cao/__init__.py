"""Driving `baton serve` with CAO 2.5.4's own clients (installed by scripts/install-cao.sh)."""
