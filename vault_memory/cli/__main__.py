"""`python -m vault_memory_cli` runs the CLI (commands from every module registered)."""

from vault_memory_cli.main import run

run()
