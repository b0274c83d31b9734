"""The typer front end of vault-memory (installed as `vault_memory_cli`)."""
