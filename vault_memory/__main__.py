"""`python -m vault_memory`: the same as the `vault-memory` command."""

from vault_memory.cli.main import run

run()
