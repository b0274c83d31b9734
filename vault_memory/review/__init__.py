"""The review: what the memory is doing, as data and as a note in the vault.

Gathering it (review), rendering the review note (review_note) and its chart (chart).

May import: the ground modules, vault_memory.vault, vault_memory.index, vault_memory.search
and vault_memory.lifecycle. Never memory.py or the edges.
"""
